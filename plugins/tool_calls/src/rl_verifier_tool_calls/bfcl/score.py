"""BFCL mode: one task holds a BFCL question row and its possible-answer row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rl_verifier import Text
from rl_verifier_tool_calls.bfcl.categories import (
    Category,
    UnknownCategory,
    category_of,
    named_category,
)
from rl_verifier_tool_calls.bfcl.checker import Call, check
from rl_verifier_tool_calls.bfcl.decode import (
    DecodeFailure,
    Reply,
    last_reply,
    prompt_calls,
    structured_calls,
)
from rl_verifier_tool_calls.bfcl.expected import BfclDataError
from rl_verifier_tool_calls.bfcl.values import CheckerStop, Mismatch
from rl_verifier_tool_calls.config import BfclSettings
from rl_verifier_tool_calls.scoring import Outcome


class BfclTaskError(ValueError):
    """The task does not hold a usable BFCL question (and answer) row."""


Rows = tuple[Category, list[Any], list[Any]]
# Rows read from a question and answer row, by the rows' identity (a task is checked once per
# sample of it): (question row, answer row, category named, rows). The rows are kept with
# their ids, so an id in here is never one of another object.
_READ: dict[tuple[int, int, Any], tuple[Any, Any, Rows]] = {}
MAX_READ = 4096


def cached_rows(reference: Mapping[str, Any]) -> Rows:
    """:func:`read_rows`, read once per question and answer row (rows are not changed in place
    while tasks are checked)."""
    question = reference.get("question")
    answer = reference.get("possible_answer")
    if answer is None and "possible_answer" not in reference:
        answer = reference.get("answer")
    named = reference.get("category")
    if named is not None and type(named) is not str:
        return read_rows(reference)
    key = (id(question), id(answer), named)
    found = _READ.get(key)
    if found is not None and found[0] is question and found[1] is answer:
        return found[2]
    rows = read_rows(reference)
    if len(_READ) >= MAX_READ:
        _READ.pop(next(iter(_READ)), None)
    _READ[key] = (question, answer, rows)
    return rows


def read_rows(reference: Mapping[str, Any]) -> Rows:
    """Category, function declarations and ground-truth calls from ``reference``.

    ``reference.question`` is the question row (``id``, ``function``); ``reference.
    possible_answer`` (alias ``answer``) the possible-answer row (``ground_truth``), which
    relevance and irrelevance rows do not need. ``reference.category`` overrides the
    category the id's prefix names."""
    question = reference.get("question")
    if not isinstance(question, dict) or not isinstance(question.get("id"), str):
        raise BfclTaskError("reference.question must be a BFCL question row with an 'id'")
    try:
        named = reference.get("category")
        category = named_category(named) if named else category_of(question["id"])
    except UnknownCategory as exc:
        raise BfclTaskError(str(exc)) from None
    functions = question.get("function", [])
    if isinstance(functions, dict):
        functions = [functions]
    if not isinstance(functions, list):
        raise BfclTaskError("question 'function' must be a list of declarations")
    if category.relevance is not None:
        return category, functions, []
    answer = reference.get("possible_answer", reference.get("answer"))
    if not isinstance(answer, dict) or not isinstance(answer.get("ground_truth"), list):
        raise BfclTaskError("reference.possible_answer must be a row with a 'ground_truth' list")
    return category, functions, list(answer["ground_truth"])


def decode(reply: Reply, category: Category, settings: BfclSettings) -> list[Call]:
    """The reply's calls for the configured model kind; :class:`DecodeFailure` otherwise."""
    if settings.model_kind == "function_calling":
        return structured_calls(reply.calls)
    return prompt_calls(
        reply.text, category.language, settings.return_format, settings.unwrap_code_fence
    )


def score_bfcl(completion: Text, reference: Mapping[str, Any], settings: BfclSettings) -> Outcome:
    """1 when the reply passes BFCL's check for its category, else 0 (``info.error_type``
    is BFCL's name for the failure, ``info.reason`` says more)."""
    category, functions, expected = cached_rows(reference)
    reply = last_reply(completion)
    failure: Mismatch | DecodeFailure | None = None
    try:
        calls: list[Call] = decode(reply, category, settings)
    except DecodeFailure as exc:
        calls, failure = [], _detached(exc)
    relevance = category.relevance
    if relevance is None:
        if failure is None:
            failure = _check(category, calls, expected, functions, settings)
    elif relevance == "irrelevance":
        failure = _irrelevance_failure(calls)
    elif failure is not None:
        failure = DecodeFailure("relevance_error:decoder_failed", str(failure))
    elif not calls:
        failure = DecodeFailure("relevance_error:decoder_failed", "expected a call, got none")
    if failure is None:
        return Outcome(
            1.0, {"correct": 1.0, "calls": float(len(calls))}, {"category": category.name}
        )
    reason = str(failure)
    if settings.model_kind == "prompt" and reply.has_calls:
        reason += " (prompt models write calls as text; set bfcl.model_kind to read tool calls)"
    info = {"category": category.name, "error_type": failure.error_type, "reason": reason}
    return Outcome(0.0, {"correct": 0.0, "calls": float(len(calls))}, info)


def _detached(failure: DecodeFailure) -> DecodeFailure:
    """The failure without its traceback and context: held in a local of the frame they hold,
    they would make a reference cycle (frames, their callers and locals) that only the
    garbage collector frees, and most outputs an RL run checks fail."""
    failure.__traceback__ = None
    failure.__context__ = None
    return failure


def _irrelevance_failure(calls: list[Call]) -> DecodeFailure | None:
    if not calls:
        return None
    return DecodeFailure("irrelevance_error:decoder_success", f"expected no call, got {len(calls)}")


def _check(
    category: Category,
    calls: list[Call],
    expected: list[Any],
    functions: list[Any],
    settings: BfclSettings,
) -> Mismatch | None:
    try:
        return check(
            category,
            calls,
            expected,
            functions,
            underscored=settings.underscored,
            any_order=settings.parallel_any_order,
        )
    except CheckerStop as exc:
        return Mismatch("checker_error", f"BFCL's checker cannot judge this output: {exc}")
    except BfclDataError as exc:
        raise BfclTaskError(str(exc)) from None
