"""JSON Lines in and out: errors name the file and line; output appears whole or not at all."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

from rl_verifier.contracts import Completion, Task
from rl_verifier.engine import Sample
from rl_verifier.errors import UserError

Row = TypeVar("Row", bound=BaseModel)


def read_rows(path: Path, model: type[Row]) -> list[tuple[int, Row]]:
    """Parse every non-blank line of ``path`` as ``model``, with its line number."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    rows: list[tuple[int, Row]] = []
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                rows.append((number, parse_row(path, number, line, model)))
        except UnicodeDecodeError as exc:
            raise UserError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return rows


def parse_row(path: Path, number: int, line: str, model: type[Row]) -> Row:
    where = f"{path}:{number}"
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: malformed JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(row)"
        problem = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UserError(f"{where}: field '{field}': {problem}{more}") from None


def load_tasks(path: Path) -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for number, task in read_rows(path, Task):
        if task.id in tasks:
            raise UserError(f"{path}:{number}: duplicate task id '{task.id}'")
        tasks[task.id] = task
    return tasks


def load_samples(tasks: dict[str, Task], path: Path) -> list[Sample]:
    """Completions joined to their tasks; ``index`` counts per task in file order."""
    counts: dict[str, int] = {}
    samples: list[Sample] = []
    for number, completion in read_rows(path, Completion):
        task = tasks.get(completion.task_id)
        if task is None:
            raise UserError(
                f"{path}:{number}: task_id '{completion.task_id}' is not in the tasks file"
            )
        index = counts.get(task.id, 0)
        counts[task.id] = index + 1
        samples.append(Sample(task, completion, index))
    return samples


@contextmanager
def atomic_output(path: Path) -> Iterator[IO[str]]:
    """Write to ``path.partial``, flushed line by line, and rename on success."""
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = partial.open("w", encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)
