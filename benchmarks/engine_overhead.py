"""Per-sample cost of killable isolation, against the naive way to get it.

Scores the same batch of trivial checks (`exact_match`) several ways and prints
samples/s side by side:

- direct:          a plain loop calling verify() (no isolation, no timeout): the floor
- inline engine:   our engine in this process (timeouts only for cooperative code)
- process engine:  our engine with pooled, killable worker processes (the default):
                   samples in batches per worker message, and one sample per message
                   (``max_batch=1``, the path before batching)
- rlv verify:      the command end to end (a fresh interpreter: start-up, reading the
                   JSONL files, scoring on the process executor, writing the scores),
                   beside a bare Python loop over the same verifier in a fresh process
- fresh process:   a new Python process per sample, the naive way to make every check
                   killable; the baseline the process engine must beat

Then the ratios: process engine (batched, and one per message) against inline, and
``rlv verify`` against the bare loop.

Run: .venv/bin/python benchmarks/engine_overhead.py [--samples N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rl_verifier import Completion, Task
from rl_verifier.base.reward import Reward
from rl_verifier.builtin.plugin import ExactMatch
from rl_verifier.execution.executors import Executor, ProcessExecutor
from rl_verifier.scoring.engine import Sample, ScoringEngine, make_executor, score_batch

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


def engine(samples: list[Sample], executor: Executor) -> None:
    reward = Reward.of(ExactMatch())
    jobs = [(reward, s) for s in samples]
    result = asyncio.run(score_batch(jobs, executor))
    assert len(result.scores) == len(samples)
    assert all(s.status.value == "ok" for s in result.scores)


def warm_engine(samples: list[Sample], executor: Executor) -> float:
    """Seconds to score ``samples`` on an executor already started (its workers spawned and
    the verifier opened by a first batch): the per-sample cost without the start-up."""
    reward = Reward.of(ExactMatch())
    jobs = [(reward, s) for s in samples]

    async def main() -> float:
        async with executor:
            await ScoringEngine(executor, cache=False).score(jobs[:200])
            start = time.perf_counter()
            scores = await ScoringEngine(executor, cache=False).score(jobs)
            took = time.perf_counter() - start
        assert all(s.status.value == "ok" for s in scores)
        return took

    return asyncio.run(main())


BARE_LOOP = """
import json, sys
from rl_verifier import Completion, Task
from rl_verifier.builtin.plugin import ExactMatch
verifier = ExactMatch()
tasks = {t["id"]: Task.model_validate(t) for t in map(json.loads, open(sys.argv[1]))}
for row in map(json.loads, open(sys.argv[2])):
    verifier.verify(tasks[row["task_id"]], Completion.model_validate(row))
"""


def write_files(folder: Path, count: int) -> tuple[Path, Path]:
    tasks, completions = folder / "tasks.jsonl", folder / "completions.jsonl"
    tasks.write_text(
        json.dumps({"id": "t", "prompt": "2+2?", "verifier": "exact_match",
                    "reference": {"answer": "4"}}) + "\n"
    )  # fmt: skip
    texts = ["<answer>4</answer>", "<answer>five</answer>"]
    completions.write_text(
        "".join(json.dumps({"task_id": "t", "completion": texts[i % 2]}) + "\n"
                for i in range(count))
    )  # fmt: skip
    return tasks, completions


def rlv_verify(folder: Path, tasks: Path, completions: Path) -> None:
    rlv = Path(sys.executable).with_name("rlv")
    subprocess.run(
        [str(rlv), "verify", "--tasks", str(tasks), "--completions", str(completions),
         "--out", str(folder / "scores.jsonl")],
        check=True, capture_output=True,
    )  # fmt: skip


def bare_loop(tasks: Path, completions: Path) -> None:
    subprocess.run([sys.executable, "-c", BARE_LOOP, str(tasks), str(completions)], check=True)


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
    parser.add_argument("--fresh-samples", type=int, default=10)
    args = parser.parse_args()
    batch = make_batch(args.samples)
    rows = [
        ("direct loop (no isolation)", args.samples, timed(lambda: direct(batch))),
        ("inline engine", args.samples, timed(lambda: engine(batch, make_executor("inline")))),
        ("inline engine, started", args.samples, warm_engine(batch, make_executor("inline"))),
        (
            "process engine (pooled, killable)",
            args.samples,
            timed(lambda: engine(batch, make_executor("process"))),
        ),
        (
            "process engine, started",
            args.samples,
            warm_engine(batch, make_executor("process")),
        ),
        (
            "process engine, one sample per message",
            args.samples,
            warm_engine(batch, ProcessExecutor(max_batch=1)),
        ),
    ]
    with tempfile.TemporaryDirectory() as folder:
        tasks, completions = write_files(Path(folder), args.samples)
        rows.append(
            ("rlv verify, end to end", args.samples,
             timed(lambda: rlv_verify(Path(folder), tasks, completions)))
        )  # fmt: skip
        rows.append(
            ("bare loop in a fresh python", args.samples,
             timed(lambda: bare_loop(tasks, completions)))
        )  # fmt: skip
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
    seconds = {name: took / count for name, count, took in rows}
    inline = seconds["inline engine, started"]
    print(f"load average {os.getloadavg()[0]:.1f} (other jobs share the cores)")
    print("per sample, executors started (workers spawned, verifier opened):")
    print(
        f"  process engine, batched, vs inline: "
        f"{seconds['process engine, started'] / inline:.2f}x (goal <= 2x)"
    )
    print(
        f"  process engine, one sample per message, vs inline: "
        f"{seconds['process engine, one sample per message'] / inline:.2f}x"
    )
    print(
        f"rlv verify end to end vs a bare loop in a fresh python: "
        f"{seconds['rlv verify, end to end'] / seconds['bare loop in a fresh python']:.2f}x"
    )
    pooled = (
        seconds["fresh process per sample (baseline)"]
        / seconds["process engine (pooled, killable)"]
    )
    print(f"process engine vs fresh process per sample: {pooled:.1f}x the throughput")


if __name__ == "__main__":
    main()
