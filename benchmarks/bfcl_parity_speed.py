"""BFCL checks per second: bfcl-eval's own checker and BFCL mode, on the same cases.

The cases are the parity test's (plugins/tool_calls/tests/tool_calls_bfcl_parity.py): the
ground truth of every AST category bfcl-eval ships, mutations of it, and relevance replies,
for prompt and function-calling models. Each side decodes the reply and checks it:

- bfcl-eval: its decoder (Python, Java, JavaScript or JSON call text; for function calling
  the decoded tool calls) and ``ast_checker``, or its relevance rule;
- BFCL mode through ``ToolCallsVerifier.verify()`` (a verdict per case, the case's Task
  and Completion validated in the loop, as a trainer scoring per sample builds them:
  Task from the question rows, Completion from the reply), through ``verify()`` on
  Task and Completion objects built beforehand (as the engine holds them: read once from
  the input files), and through ``score_bfcl()`` (the check alone).

One process, one core at a time. Needs bfcl-eval:
``pip install --no-deps -r plugins/tool_calls/requirements-parity.txt``.

Run: .venv/bin/python benchmarks/bfcl_parity_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins/tool_calls/tests"))

import tool_calls_bfcl_parity as parity

from rl_verifier.base.contracts import Completion
from rl_verifier_tool_calls.bfcl.score import score_bfcl
from rl_verifier_tool_calls.config import BfclSettings
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


def timed(ways: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """Best wall-clock and CPU seconds of each way over ``repeat`` rounds; each round runs
    every way once, so a change in the machine's load falls on all of them alike."""
    best = dict.fromkeys(ways, (float("inf"), float("inf")))
    for _ in range(repeat):
        for label, run in ways.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            best[label] = min(best[label], (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each way's best counts")
    args = parser.parse_args()
    official = parity.Official()
    cases = parity.all_cases(official)
    built = [
        (case.setting, task, Completion(task_id=task.id, completion=case.completion()))
        for case in cases
        for task in [case.task()]
    ]
    tasks = [(setting, task.reference, done.completion) for setting, task, done in built]
    settings = {name: BfclSettings(**values) for name, values in parity.SETTINGS.items()}
    verifiers = {
        name: ToolCallsVerifier({"mode": "bfcl", "bfcl": values})
        for name, values in parity.SETTINGS.items()
    }

    def check_alone() -> None:
        for setting, reference, completion in tasks:
            score_bfcl(completion, reference, settings[setting])

    def verify_built() -> None:
        for setting, task, completion in built:
            verifiers[setting].verify(task, completion)

    def bfcl_eval() -> None:
        for case in cases:
            official.verdict(case)

    def verify() -> None:  # what a trainer pays per sample: Task and Completion built too
        for case in cases:
            task = case.task()
            done = Completion(task_id=task.id, completion=case.completion())
            verifiers[case.setting].verify(task, done)

    ways: dict[str, Callable[[], object]] = {
        "bfcl-eval: decode + ast_checker": bfcl_eval,
        "BFCL mode: verify()": verify,
        "BFCL mode: verify(), inputs built": verify_built,
        "BFCL mode: score_bfcl()": check_alone,
    }
    rows = list(timed(ways, args.repeat).items())
    tallies, differ = parity.compare(official, cases)
    agreement = 1 - len(differ) / len(cases)
    rejected = sum(t.rejected for t in tallies.values())
    same_error = sum(t.same_error for t in tallies.values()) / max(rejected, 1)
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{len(cases):,} cases ({len(tallies)} categories), best of {args.repeat}; "
          f"agreement {agreement:.4%}; same error type on {same_error:.4%} of "
          f"{rejected:,} rejected by both")  # fmt: skip
    print(f"{'way':<34} {'wall s':>8} {'CPU s':>8} {'checks/s':>10} {'vs bfcl-eval':>13}")
    baseline = len(cases) / max(rows[0][1][1], 1e-9)
    for label, (wall, cpu) in rows:
        rate = len(cases) / max(cpu, 1e-9)
        print(f"{label:<34} {wall:>8.2f} {cpu:>8.2f} {rate:>10,.0f} {rate / baseline:>12.2f}x")


if __name__ == "__main__":
    main()
