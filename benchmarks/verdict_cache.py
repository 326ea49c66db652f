"""How much the verdict cache saves on real runs: duplicate (task, completion) pairs per
group and per run, and the scoring time with the cache off and on, side by side.

Reads the ``samples.jsonl`` and ``config.json`` of training runs (set
``samples_logged_per_step`` to ``groups_per_step * group_size`` so that every rollout is
logged; with fewer, the shares are of the logged rollouts only, as printed). Each run's
samples are scored with its own reward spec and verifier settings, once without a cache
and once with the engine's default in-process cache, on the same executor.

Run: .venv/bin/python benchmarks/verdict_cache.py RUN_DIR [RUN_DIR ...]
     (e.g. a demo run made with samples_logged_per_step = 128)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rl_verifier import Completion, Sample, Task, make_executor
from rl_verifier.files.jsonl import read_json_objects
from rl_verifier.scoring.engine import score_batch
from rl_verifier.scoring.resolve import load_task_source, reward_for
from rl_verifier.train.config import TrainConfig, load_config


def run_samples(run: Path) -> tuple[list[dict[str, Any]], dict[str, Task], TrainConfig]:
    """A run's logged rollouts, its tasks and its settings."""
    train = load_config(run / "config.json")
    rows = [row for _, row in read_json_objects(run / "samples.jsonl")]
    return rows, load_task_source(train.tasks), train


def duplicate_shares(rows: list[dict[str, Any]]) -> tuple[float, float, int, int]:
    """Share of rollouts that repeat an earlier one of their group (same step and task),
    and of the run (same task, any step); the numbers of groups and rollouts."""
    groups: dict[tuple[int, str], Counter[str]] = {}
    for row in rows:
        key = (int(row["step"]), str(row["task_id"]))
        groups.setdefault(key, Counter())[str(row["completion"])] += 1
    in_group = sum(count - 1 for counts in groups.values() for count in counts.values())
    distinct_run = {(str(r["task_id"]), str(r["completion"])) for r in rows}
    return in_group / len(rows), 1 - len(distinct_run) / len(rows), len(groups), len(rows)


def score_seconds(samples: list[Sample], reward: Any, cache: bool, executor: str) -> float:
    jobs = [(reward, sample) for sample in samples]
    start = time.perf_counter()
    asyncio.run(score_batch(jobs, make_executor(executor), cache=cache))  # type: ignore[arg-type]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--executor", default="process", choices=["process", "inline"])
    args = parser.parse_args()
    print(f"{'run':40s} {'rollouts':>8s} {'groups':>6s} {'dup/group':>9s} {'dup/run':>8s} "
          f"{'no cache s':>10s} {'cache s':>8s} {'saved':>6s}")  # fmt: skip
    for run in args.runs:
        rows, tasks, train = run_samples(run)
        reward = reward_for(train.reward, train.verifier_config)
        samples = []
        for index, row in enumerate(rows):
            task = tasks[str(row["task_id"])]
            completion = Completion(task_id=task.id, completion=row["completion"])
            samples.append(Sample(task, completion, index))
        per_group, per_run, groups, count = duplicate_shares(rows)
        off = score_seconds(samples, reward, False, args.executor)
        on = score_seconds(samples, reward, True, args.executor)
        print(f"{run.name:40s} {count:8d} {groups:6d} {per_group:9.1%} {per_run:8.1%} "
              f"{off:10.2f} {on:8.2f} {1 - on / off:6.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
