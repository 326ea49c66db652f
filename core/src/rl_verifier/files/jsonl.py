"""JSON Lines in and out: errors name the file and line; output appears whole or not at all.

``-`` as a path means standard input (or output). Columns a row's model does not know
are left out, so real data dumps with extra columns load; they are returned beside
each row for callers that carry them along.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from rl_verifier.base.contracts import Completion, Sample, Task
from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.files.atomic import growing_file
from rl_verifier.files.task_formats import as_task
from rl_verifier.parsing.json_input import input_problem

Row = TypeVar("Row", bound=BaseModel)
STDIO = "-"
Adapt = Callable[[dict[str, Any], int], dict[str, Any]]


@dataclass(frozen=True)
class Parsed(Generic[Row]):
    """One row of a JSONL file: its line number, the row and the columns left out."""

    line: int
    row: Row
    extra: dict[str, Any] = field(default_factory=dict)


def is_stdio(path: Path | str) -> bool:
    return str(path) == STDIO


def display(path: Path | str) -> str:
    return "<stdin>" if is_stdio(path) else str(path)


@contextmanager
def open_text(path: Path) -> Iterator[Iterable[str]]:
    """Lines of ``path`` (or of standard input for ``-``), with user-facing errors."""
    if is_stdio(path):
        yield sys.stdin
        return
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, expected a JSONL file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    with handle:
        yield handle


def read_rows(path: Path, model: type[Row]) -> list[tuple[int, Row]]:
    """Parse every non-blank line of ``path`` as ``model``, with its line number."""
    return [(parsed.line, parsed.row) for parsed in read_parsed(path, model)]


def read_parsed(path: Path, model: type[Row], adapt: Adapt | None = None) -> list[Parsed[Row]]:
    """Every non-blank line of ``path`` as ``model``, with its unknown columns; ``adapt``
    may rewrite each row's object (with its line number) first."""
    rows: list[Parsed[Row]] = []
    with open_text(path) as lines:
        try:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    rows.append(parse_row(display(path), number, line, model, adapt))
        except UnicodeDecodeError as exc:
            raise UserError(f"{display(path)}: not UTF-8 text ({exc.reason})") from None
    return rows


def parse_row(
    name: str, number: int, line: str, model: type[Row], adapt: Adapt | None = None
) -> Parsed[Row]:
    where = f"{name}:{number}"
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: malformed JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(data).__name__}")
    problem = input_problem(data)
    if problem is not None:
        raise UserError(f"{where}: {problem}")
    if adapt is not None:
        data = adapt(data, number)
    known = {k: v for k, v in data.items() if k in model.model_fields}
    extra = {k: v for k, v in data.items() if k not in model.model_fields}
    try:
        return Parsed(number, model.model_validate(known), extra)
    except ValidationError as exc:
        problems = validation_problems(exc)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{where}: {problems[0]}{more}") from None


def index_tasks(rows: Iterable[Parsed[Task]], source: str) -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for parsed in rows:
        if parsed.row.id in tasks:
            raise UserError(f"{source}:{parsed.line}: duplicate task id '{parsed.row.id}'")
        tasks[parsed.row.id] = parsed.row
    return tasks


def load_tasks(path: Path) -> dict[str, Task]:
    """Tasks by id; rows of HumanEval, MBPP, GSM8K and MATH-500 files are read as they are
    (``task_formats``)."""
    return index_tasks(read_parsed(path, Task, as_task), display(path))


def load_samples(tasks: dict[str, Task], path: Path) -> list[Sample]:
    """Completions joined to their tasks; ``index`` counts per task in file order."""
    return [sample for sample, _ in load_samples_with_columns(tasks, path)]


def load_samples_with_columns(
    tasks: dict[str, Task], path: Path
) -> list[tuple[Sample, dict[str, Any]]]:
    """Like ``load_samples``, with each completion row's unknown columns."""
    counts: dict[str, int] = {}
    samples: list[tuple[Sample, dict[str, Any]]] = []
    for parsed in read_parsed(path, Completion):
        completion = parsed.row
        task = tasks.get(completion.task_id)
        if task is None:
            raise UserError(
                f"{display(path)}:{parsed.line}: task_id '{completion.task_id}' "
                "is not in the tasks file"
            )
        index = counts.get(task.id, 0)
        counts[task.id] = index + 1
        samples.append((Sample(task, completion, index), parsed.extra))
    return samples


def read_json_objects(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Each JSON-object line of a file that rl-verifier appends to, with its line number.

    A last line without its newline was torn by an interrupted writer and is left out;
    any other malformed line is a ``UserError`` naming the file and line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = number == len(lines)  # no newline after it
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if torn:
                break
            raise UserError(
                f"{path}:{number}: malformed JSON: {exc.msg} at column {exc.colno}"
            ) from None
        except RecursionError:
            raise UserError(f"{path}:{number}: JSON nested too deeply to read") from None
        if not isinstance(data, dict):
            raise UserError(f"{path}:{number}: expected a JSON object, got {type(data).__name__}")
        rows.append((number, data))
    return rows


def partial_path(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


@contextmanager
def atomic_output(path: Path, resumable: bool = False) -> Iterator[IO[str]]:
    """Write to ``path.partial``, flushed line by line, and rename on success.

    On failure the partial file is removed. A ``resumable`` output appends to the
    partial file and keeps it after an interrupt (Ctrl-C), so finished rows survive
    for a later ``--resume``.
    """
    partial = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.open("a").close()  # a user error here, not a traceback from the body
    except OSError as exc:
        raise UserError(f"{path}: cannot write: {exc.strerror}") from None
    with growing_file(path, partial, append=resumable) as handle:
        yield handle
