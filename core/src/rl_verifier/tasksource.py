"""Where tasks come from: a JSONL file, standard input, or a plugin's task set."""

from __future__ import annotations

from pathlib import Path

from rl_verifier.contracts import Task
from rl_verifier.errors import UserError
from rl_verifier.jsonl import Parsed, index_tasks, load_tasks
from rl_verifier.plugins import get_plugins

TASKSET_PREFIX = "taskset:"


def load_task_source(source: str) -> dict[str, Task]:
    """Tasks by id from ``taskset:NAME``, a JSONL path, or ``-`` (standard input)."""
    if not source.startswith(TASKSET_PREFIX):
        return load_tasks(Path(source))
    name = source.removeprefix(TASKSET_PREFIX)
    task_sets = get_plugins().task_sets
    if name not in task_sets:
        known = ", ".join(sorted(task_sets)) or "none installed"
        raise UserError(f"unknown task set '{name}'; known task sets: {known}")
    tasks = task_sets[name].value()
    return index_tasks((Parsed(n, task) for n, task in enumerate(tasks, start=1)), source)
