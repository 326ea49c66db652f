"""Per-sample cost of killable isolation, against the naive way to get it.

Scores the same batch of trivial checks (`exact_match`) four ways and prints
samples/s side by side:

- direct:          a plain loop calling verify() (no isolation, no timeout): the floor
- inline engine:   our engine in this process (timeouts only for cooperative code)
- process engine:  our engine with pooled, killable worker processes (the default)
- fresh process:   a new Python process per sample, the naive way to make every check
                   killable; the baseline the process engine must beat

Run: .venv/bin/python benchmarks/engine_overhead.py [--samples N]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from collections.abc import Callable

from rl_verifier import Completion, Task
from rl_verifier.builtin import ExactMatch
from rl_verifier.engine import Sample, make_executor, score_batch
from rl_verifier.reward import Reward

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")


def make_batch(count: int) -> list[Sample]:
    task = Task(id="t", prompt="2+2?", reference={"answer": "4"})
    texts = ["<answer>4</answer>", "<answer>five</answer>"]
    return [Sample(task, Completion(task_id="t", completion=texts[i % 2]), i) for i in range(count)]


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def direct(samples: list[Sample]) -> None:
    verifier = ExactMatch()
    for sample in samples:
        verifier.verify(sample.task, sample.completion)


def engine(samples: list[Sample], kind: str) -> None:
    reward = Reward.of(ExactMatch())
    jobs = [(reward, s) for s in samples]
    result = asyncio.run(score_batch(jobs, make_executor(kind)))  # type: ignore[arg-type]
    assert len(result.scores) == len(samples)


def _check_in_child(sample: Sample) -> None:
    ExactMatch().verify(sample.task, sample.completion)


def fresh_process(samples: list[Sample]) -> None:
    context = multiprocessing.get_context("spawn")
    for sample in samples:
        child = context.Process(target=_check_in_child, args=(sample,))
        child.start()
        child.join(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--fresh-samples", type=int, default=40)
    args = parser.parse_args()
    batch = make_batch(args.samples)
    rows = [
        ("direct loop (no isolation)", args.samples, timed(lambda: direct(batch))),
        ("inline engine", args.samples, timed(lambda: engine(batch, "inline"))),
        (
            "process engine (pooled, killable)",
            args.samples,
            timed(lambda: engine(batch, "process")),
        ),
    ]
    few = batch[: args.fresh_samples]
    rows.append(
        ("fresh process per sample (baseline)", len(few), timed(lambda: fresh_process(few)))
    )
    print(f"cores: {os.cpu_count()}")
    print(f"{'method':<38} {'samples':>8} {'seconds':>9} {'samples/s':>11} {'ms/sample':>10}")
    for name, count, seconds in rows:
        print(
            f"{name:<38} {count:>8} {seconds:>9.3f} {count / seconds:>11.1f} "
            f"{1000 * seconds / count:>10.3f}"
        )
    pooled = rows[2][1] / rows[2][2]
    naive = rows[3][1] / rows[3][2]
    print(f"process engine vs fresh process per sample: {pooled / naive:.1f}x the throughput")


if __name__ == "__main__":
    main()
