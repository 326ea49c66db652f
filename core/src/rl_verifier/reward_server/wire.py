"""Request bodies in, answers out: the typed batch and OpenRLHF's remote reward protocol.

The typed endpoint takes what ``rlv verify`` reads (``tasks``: ``{id, prompt, reference,
...}``, ``completions``: ``{task_id, completion}``) and answers with the rows it writes.
OpenRLHF sends ``query`` (prompt and response as one decoded text), ``prompts`` and
``labels``: the completion is the part of the query after its prompt, a string label is
``reference.answer`` and a JSON-object label (or a string holding one) the whole
reference. Unknown columns of a task or completion are ignored, as ``rlv verify`` does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from rl_verifier.base.contracts import Completion, Score, Status, Task
from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.integrations.common import prompt_id
from rl_verifier.parsing.json_input import check_input
from rl_verifier.reward_server.admission import Ticket, TooLarge
from rl_verifier.scoring.engine import Sample

TYPED_KEYS = frozenset({"tasks", "completions", "deadline_s"})
OPENRLHF_KEYS = frozenset({"query", "prompts", "labels"})
Row = TypeVar("Row", bound=BaseModel)


@dataclass(frozen=True)
class Batch:
    """Samples to score, each numbered among its task's completions as ``rlv verify`` does;
    the deadline the client asked for (``None``: the server's); and, by position, samples
    that cannot be scored and why (answered as ``error`` rows)."""

    samples: list[Sample]
    deadline_s: float | None = None
    problems: Mapping[int, str] = field(default_factory=dict)


async def read_body(request: Request, limit: int, ticket: Ticket) -> bytes:
    """The body, refused (413) past ``limit`` bytes; each chunk is charged to ``ticket``
    before it is kept."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the body is {declared} bytes, more than --max-body-mb allows")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the body is more than {limit} bytes (--max-body-mb)")
        ticket.hold_bytes(len(chunk))
        chunks.append(chunk)
    return b"".join(chunks)


def json_object(raw: bytes, allowed: frozenset[str]) -> dict[str, Any]:
    """The body as a JSON object with only ``allowed`` keys."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        raise UserError(f"the body is not JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise UserError(f"the body must be a JSON object, got {type(data).__name__}")
    check_input(data)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise UserError(
            f"unknown key{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(sorted(allowed))}"
        )
    return data


def _row(model: type[Row], value: Any, where: str) -> Row:
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: expected a JSON object, got {type(value).__name__}")
    known = {key: item for key, item in value.items() if key in model.model_fields}
    try:
        return model.model_validate(known)
    except ValidationError as exc:
        problems = validation_problems(exc)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{where}: {problems[0]}{more}") from None


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise UserError(f"'{key}' must be a list, got {type(value).__name__}")
    return value


def typed_batch(raw: bytes) -> Batch:
    """``{"tasks": [...], "completions": [...], "deadline_s": S}`` as samples."""
    data = json_object(raw, TYPED_KEYS)
    tasks: dict[str, Task] = {}
    for position, value in enumerate(_list(data, "tasks")):
        task = _row(Task, value, f"tasks[{position}]")
        if task.id in tasks:
            raise UserError(f"tasks[{position}]: duplicate task id '{task.id}'")
        tasks[task.id] = task
    counts: dict[str, int] = {}
    samples = []
    for position, value in enumerate(_list(data, "completions")):
        completion = _row(Completion, value, f"completions[{position}]")
        known = tasks.get(completion.task_id)
        if known is None:
            raise UserError(
                f"completions[{position}]: task_id '{completion.task_id}' is not in 'tasks'"
            )
        index = counts.get(known.id, 0)
        counts[known.id] = index + 1
        samples.append(Sample(known, completion, index))
    return Batch(samples, _deadline(data.get("deadline_s")))


def _deadline(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"'deadline_s' must be a positive number of seconds, got {value!r}")
    if not math.isfinite(value):
        return None
    return float(value)


def label_reference(label: Any, where: str = "label") -> dict[str, Any]:
    """A task's reference from an OpenRLHF label: an object (or a string holding one) is
    the reference itself; any other value is its ``answer``; no label, no reference."""
    if label is None:
        return {}
    if isinstance(label, Mapping):
        return dict(label)
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = json.loads(label)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's limit
            parsed = None
        if isinstance(parsed, dict):
            check_input(parsed, where)
            return parsed
    return {"answer": label}


def response_text(query: str, prompt: str) -> str | None:
    """The part of ``query`` after ``prompt`` (``None`` when the query does not hold it)."""
    if query.startswith(prompt):
        return query[len(prompt) :]
    start = query.find(prompt)
    return None if start < 0 or not prompt else query[start + len(prompt) :]


def openrlhf_batch(raw: bytes) -> Batch:
    """``{"query": [...], "prompts": [...], "labels": [...]}`` as samples; ``prompts`` and
    ``labels`` may be left out (then the whole query is the completion, no reference)."""
    data = json_object(raw, OPENRLHF_KEYS)
    queries = _list(data, "query")
    prompts = _list(data, "prompts") if data.get("prompts") is not None else None
    labels = _list(data, "labels") if data.get("labels") is not None else None
    for key, values in (("prompts", prompts), ("labels", labels)):
        if values is not None and len(values) != len(queries):
            raise UserError(f"'{key}' holds {len(values)} items and 'query' {len(queries)}")
    counts: dict[str, int] = {}
    samples: list[Sample] = []
    problems: dict[int, str] = {}
    for position, query in enumerate(queries):
        prompt = prompts[position] if prompts is not None else ""
        if not isinstance(query, str) or not isinstance(prompt, str):
            raise UserError(f"query[{position}] and prompts[{position}] must be strings")
        label = labels[position] if labels is not None else None
        reference = label_reference(label, f"labels[{position}]")
        text = response_text(query, prompt)
        if text is None:
            problems[position] = (
                f"query[{position}] does not contain prompts[{position}], so the response "
                "cannot be told apart from the prompt"
            )
        task = Task(id=prompt_id([prompt, reference]), prompt=prompt, reference=reference)
        index = counts.get(task.id, 0)
        counts[task.id] = index + 1
        completion = Completion(task_id=task.id, completion=query if text is None else text)
        samples.append(Sample(task, completion, index))
    return Batch(samples, None, problems)


def typed_answer(scores: Sequence[Score]) -> bytes:
    """``{"scores": [...]}``: each row exactly as ``rlv verify`` writes it."""
    return b'{"scores":[' + b",".join(s.model_dump_json().encode() for s in scores) + b"]}"


def openrlhf_answer(scores: Sequence[Score], failed_reward: float) -> bytes:
    """OpenRLHF's ``rewards``/``scores``/``extra_logs``, plus ``rlv_scores`` (the rows).

    The protocol needs a number for every sample, so a ``timeout`` or ``error`` (no
    judgement of the model) gets ``failed_reward``; ``extra_logs`` gives per-sample status
    indicators (``rlv_judged``, ``rlv_timeout``, ...) for the trainer's logs.
    """
    rewards = [s.reward if s.status.judged else failed_reward for s in scores]
    logs: dict[str, list[float]] = {"rlv_judged": [float(s.status.judged) for s in scores]}
    for status in Status:
        logs[f"rlv_{status.value}"] = [float(s.status is status) for s in scores]
    head = json.dumps({"rewards": rewards, "scores": rewards, "extra_logs": logs})
    rows = b",".join(s.model_dump_json().encode() for s in scores)
    return head[:-1].encode() + b',"rlv_scores":[' + rows + b"]}"
