"""Generate the math example's tasks and warm-up answers (deterministic; rerun to refresh).

Tasks: the `math-example` task set of rl-verifier-math (64 sums, differences and products of
small numbers), written out so the example has its tasks beside its config. Warm-up: for
each task, two answers in the right *format* (`\\boxed{N}`) with random numbers, so the
warm start teaches where the answer goes and nothing about arithmetic; whatever the policy
gets right in RL it learns from the `math` verifier's reward.

Run: python examples/math/make_math.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rl_verifier.internal import write_text
from rl_verifier_math import arithmetic_tasks

HERE = Path(__file__).parent
ANSWERS_PER_TASK = 2


def main() -> None:
    rng = random.Random(20261201)
    tasks = arithmetic_tasks()
    warmup = [
        {"task_id": task.id, "completion": f"\\boxed{{{rng.randint(-5, 99)}}}"}
        for task in tasks
        for _ in range(ANSWERS_PER_TASK)
    ]
    write_jsonl(HERE / "tasks.jsonl", [t.model_dump(mode="json") for t in tasks])
    write_jsonl(HERE / "warmup.jsonl", warmup)
    print(f"wrote {len(tasks)} tasks and {len(warmup)} warm-up answers to {HERE}")


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
