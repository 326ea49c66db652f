"""Throughput of the ``math`` verifier beside calling math-verify directly.

The workload is the parity set's pairs (plugins/math/tests/data/parity.jsonl: numbers,
fractions, expressions, intervals, sets, GSM8K-style text, reward hacks), less the "giant"
hacks, which measure deadlines rather than speed, repeated to --samples. Four ways:

- math-verify directly: ``verify(parse(gold), parse(completion))`` in a loop, with its own
  signal-based timeouts, as its documentation calls it (the baseline);
- our verify() in a plain loop (math-verify plus extraction and the hack screens);
- the engine, inline executor (one process; what ``--executor inline`` does);
- the engine, process executor with --workers workers (the default for ``rlv verify``);
- then math-verify and our loop once more over each distinct pair once, our parse cache
  emptied first (what the figures above owe to repeated references and answers).

The first three run in this process, one core at a time, so samples per CPU second is the
throughput per core; the process executor's figure is wall-clock samples/s across workers.
Wall-clock figures also count time other processes held the cores on a shared machine.

Run: .venv/bin/python benchmarks/math_throughput.py [--samples N] [--workers W]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from math_verify import parse, verify

from rl_verifier import Completion, Task
from rl_verifier.base.reward import Reward
from rl_verifier.scoring.engine import Sample, make_executor, score_batch
from rl_verifier_math import MathVerifier
from rl_verifier_math.compare import forget_parses

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

PAIRS = Path(__file__).parents[1] / "plugins" / "math" / "tests" / "data" / "parity.jsonl"


def load_rows(count: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("hack") != "giant"]
    return [rows[i % len(rows)] for i in range(count)]


def as_sample(row: dict[str, Any], index: int) -> Sample:
    task = Task(
        id=f"{row['id']}-{index}",
        prompt=row.get("prompt", "Solve."),
        reference={"answer": row["reference"]},
    )
    return Sample(task, Completion(task_id=task.id, completion=row["answer"]), 0)


def timed(run: Callable[[], object], count: int) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall_s": wall, "cpu_s": cpu, "per_wall_s": count / wall, "per_cpu_s": count / cpu}


def direct(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        reference = row["reference"]
        gold = parse(reference if "####" in reference else f"${reference}$")
        verify(gold, parse(row["answer"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    rows = load_rows(args.samples)
    samples = [as_sample(row, i) for i, row in enumerate(rows)]
    verifier = MathVerifier()
    reward = Reward.of(verifier)
    direct(rows[:50])  # warm math-verify's grammar and sympy before timing anything

    def plain_loop() -> None:
        for sample in samples:
            verifier.verify(sample.task, sample.completion)

    def engine(kind: str) -> Callable[[], object]:
        def run() -> object:
            jobs = [(reward, s) for s in samples]
            return asyncio.run(score_batch(jobs, make_executor(kind, args.workers)))  # type: ignore[arg-type]

        return run

    results = {
        "math-verify directly": timed(lambda: direct(rows), len(rows)),
        "math verifier, plain loop": timed(plain_loop, len(rows)),
        "math verifier, engine inline": timed(engine("inline"), len(rows)),
        f"math verifier, engine process x{args.workers}": timed(engine("process"), len(rows)),
    }
    # Each distinct pair once, with the verifier's parse cache emptied first: what the figures
    # above owe to repeated references and answers (parsed once per process).
    once = load_rows(len({r["id"] for r in rows}))
    once_samples = [as_sample(row, i) for i, row in enumerate(once)]
    results["math-verify directly, each pair once"] = timed(lambda: direct(once), len(once))
    forget_parses()

    def once_loop() -> None:
        for sample in once_samples:
            verifier.verify(sample.task, sample.completion)

    results["math verifier, plain loop, each pair once"] = timed(once_loop, len(once))
    distinct = len({r["id"] for r in rows})
    print(f"{len(rows)} samples ({distinct} distinct pairs), {os.cpu_count()} cores")
    print(f"{'':44} {'samples/s (wall)':>17} {'samples/CPU s':>14} {'wall s':>8}")
    for name, r in results.items():
        per_cpu = f"{r['per_cpu_s']:14.0f}" if "process" not in name else f"{'-':>14}"
        print(f"{name:44} {r['per_wall_s']:17.0f} {per_cpu} {r['wall_s']:8.2f}")


if __name__ == "__main__":
    main()
