"""BFCL mode: one task holds a BFCL question row and its possible-answer row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rl_verifier_tool_calls.bfcl.checker import Mismatch, category_of, check
from rl_verifier_tool_calls.bfcl.parse import OutputParseError, ParsedCall, parse_output
from rl_verifier_tool_calls.scoring import Outcome
from rl_verifier_tool_calls.trajectory import Trajectory


class BfclTaskError(ValueError):
    """The task does not hold a usable BFCL question (and answer) row."""


def read_rows(reference: Mapping[str, Any]) -> tuple[str, list[Any], list[Any]]:
    """Category, function declarations and ground-truth calls from ``reference``.

    ``reference.question`` is the question row (``id``, ``function``); ``reference.
    possible_answer`` (alias ``answer``) the possible-answer row (``ground_truth``), which
    irrelevance rows do not need."""
    question = reference.get("question")
    if not isinstance(question, Mapping) or not isinstance(question.get("id"), str):
        raise BfclTaskError("reference.question must be a BFCL question row with an 'id'")
    try:
        category = category_of(question["id"])
    except ValueError as exc:
        raise BfclTaskError(str(exc)) from None
    functions = question.get("function", [])
    if isinstance(functions, Mapping):
        functions = [functions]
    if not isinstance(functions, list):
        raise BfclTaskError("question 'function' must be a list of declarations")
    answer = reference.get("possible_answer", reference.get("answer"))
    if category == "irrelevance":
        return category, functions, []
    if not isinstance(answer, Mapping) or not isinstance(answer.get("ground_truth"), list):
        raise BfclTaskError("reference.possible_answer must be a row with a 'ground_truth' list")
    return category, functions, list(answer["ground_truth"])


def output_calls(trajectory: Trajectory) -> list[ParsedCall]:
    """Calls the model made: structured or ``<tool_call>`` calls, else parsed from its text."""
    if trajectory.calls:
        bad = next((c for c in trajectory.calls if c.error is not None or c.name is None), None)
        if bad is not None:
            raise OutputParseError(bad.error or "a call without a name")
        return [(str(c.name), dict(c.arguments)) for c in trajectory.calls]
    return parse_output(trajectory.final)


def score_bfcl(trajectory: Trajectory, reference: Mapping[str, Any]) -> Outcome:
    """1 when the output passes the AST check for its category, else 0."""
    category, functions, expected = read_rows(reference)
    info: dict[str, Any] = {"category": category}
    try:
        calls = output_calls(trajectory)
    except OutputParseError as exc:
        calls = []
        if category != "irrelevance":
            info["reason"] = f"output is not a list of function calls: {exc}"
            return Outcome(0.0, {"correct": 0.0, "calls": 0.0}, info)
    try:
        check(category, calls, expected, functions)
    except Mismatch as exc:
        info["reason"] = str(exc)
        return Outcome(0.0, {"correct": 0.0, "calls": float(len(calls))}, info)
    return Outcome(1.0, {"correct": 1.0, "calls": float(len(calls))}, info)
