"""The bundled Fictopedia task sets, read from the generated ``data/fictopedia.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

from rl_verifier import Task

TASKS_PATH = Path(__file__).parent / "data" / "fictopedia.jsonl"
EXAMPLES_PER_HOPS = 8


def fictopedia_tasks() -> list[Task]:
    """Every Fictopedia question, single-hop first."""
    lines = TASKS_PATH.read_text(encoding="utf-8").splitlines()
    return [Task.model_validate(json.loads(line)) for line in lines if line.strip()]


def example_tasks() -> list[Task]:
    """A small subset for smoke runs: the first 8 single-hop and 8 two-hop questions."""
    tasks = fictopedia_tasks()
    single = [t for t in tasks if t.metadata.get("hops") == 1][:EXAMPLES_PER_HOPS]
    multi = [t for t in tasks if t.metadata.get("hops") == 2][:EXAMPLES_PER_HOPS]
    return [task for pair in zip(single, multi, strict=True) for task in pair]
