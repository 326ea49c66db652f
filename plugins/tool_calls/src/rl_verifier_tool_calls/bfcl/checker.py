"""BFCL AST-checker rules: match output calls against a possible-answer row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rl_verifier_tool_calls.bfcl.normalise import normalise_string
from rl_verifier_tool_calls.bfcl.parse import ParsedCall

# Possible answer of one call: {function name: {param: [acceptable values, "" = may omit]}}.
Expected = Mapping[str, Mapping[str, Sequence[Any]]]
CATEGORIES = ("parallel_multiple", "irrelevance", "parallel", "multiple", "simple")
OMITTED = ""


class Mismatch(Exception):
    """Why an output fails the check."""


def category_of(question_id: str) -> str:
    """simple, multiple, parallel, parallel_multiple or irrelevance, from the id's prefix."""
    stem = question_id.removeprefix("live_")
    for name in CATEGORIES:
        if stem.startswith(name + "_") or stem == name:
            return name
    if stem.startswith(("java_", "javascript_", "sql_")):
        return "simple"
    raise ValueError(f"cannot tell the BFCL category of id {question_id!r}")


def check(
    category: str,
    calls: Sequence[ParsedCall],
    expected: Sequence[Expected],
    functions: Sequence[Mapping[str, Any]],
) -> None:
    """Raise :class:`Mismatch` unless ``calls`` pass the category's rules."""
    if category == "irrelevance":
        if calls:
            raise Mismatch(f"irrelevance: expected no call, got {len(calls)}")
        return
    if len(calls) != len(expected):
        raise Mismatch(f"expected {len(expected)} call(s), got {len(calls)}")
    docs = {str(f.get("name")): f for f in functions}
    if category in ("simple", "multiple"):
        for call, answer in zip(calls, expected, strict=True):
            check_call(call, answer, docs)
        return
    _match_any_order(list(calls), list(expected), docs)


def _match_any_order(
    calls: list[ParsedCall], expected: list[Expected], docs: Mapping[str, Mapping[str, Any]]
) -> None:
    """Each expected call matched by a distinct output call (backtracking over pairings)."""
    fits = [[_fits(call, answer, docs) for call in calls] for answer in expected]
    used: set[int] = set()

    def assign(row: int) -> bool:
        if row == len(expected):
            return True
        for col, ok in enumerate(fits[row]):
            if ok is None and col not in used:
                used.add(col)
                if assign(row + 1):
                    return True
                used.discard(col)
        return False

    if not assign(0):
        for row, answer in enumerate(expected):
            if all(reason is not None for reason in fits[row]):
                name = next(iter(answer), "?")
                first = next((r for r in fits[row] if r is not None), "no call")
                raise Mismatch(f"no output call matches expected {name!r}: {first}")
        raise Mismatch("output calls cannot be paired one-to-one with the expected calls")


def _fits(call: ParsedCall, answer: Expected, docs: Mapping[str, Mapping[str, Any]]) -> str | None:
    try:
        check_call(call, answer, docs)
    except Mismatch as exc:
        return str(exc)
    return None


def check_call(call: ParsedCall, answer: Expected, docs: Mapping[str, Mapping[str, Any]]) -> None:
    """One output call against one expected call and its function's declaration."""
    name, args = call
    if len(answer) != 1:
        raise Mismatch("each possible answer must name exactly one function")
    want_name, want_params = next(iter(answer.items()))
    if name != want_name and name.replace(".", "_") != want_name.replace(".", "_"):
        raise Mismatch(f"wrong function: expected {want_name!r}, got {name!r}")
    doc = docs.get(want_name, {})
    schema = doc.get("parameters", {}) if isinstance(doc, Mapping) else {}
    properties: Mapping[str, Any] = schema.get("properties", {}) or {}
    for required in schema.get("required", []) or []:
        if required not in args:
            raise Mismatch(f"{name}: missing required parameter {required!r}")
    for param, value in args.items():
        if param not in properties or param not in want_params:
            raise Mismatch(f"{name}: unexpected parameter {param!r}")
        check_value(f"{name}.{param}", value, properties[param], want_params[param])
    for param, acceptable in want_params.items():
        if param not in args and OMITTED not in acceptable:
            raise Mismatch(f"{name}: missing parameter {param!r}")


def check_value(where: str, value: Any, spec: Mapping[str, Any], acceptable: Sequence[Any]) -> None:
    """A value of the declared type that equals one of the acceptable values."""
    kind = str(spec.get("type", "any")) if isinstance(spec, Mapping) else "any"
    value = coerce(where, value, kind)
    if kind in ("array", "tuple", "list"):
        items = spec.get("items")
        item_kind = str(items.get("type", "any")) if isinstance(items, Mapping) else "any"
        value = [coerce(f"{where}[{i}]", v, item_kind) for i, v in enumerate(value)]
    if any(equal(value, candidate) for candidate in acceptable if candidate != OMITTED):
        return
    raise Mismatch(f"{where}: value {value!r} is not one of {list(acceptable)!r}")


def coerce(where: str, value: Any, kind: str) -> Any:
    """``value`` checked against ``kind``; an int is accepted (as float) where float is due."""
    if kind in ("float", "number"):
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        ok = isinstance(value, float)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "string":
        ok = isinstance(value, str)
    elif kind in ("array", "tuple", "list"):
        if isinstance(value, tuple):
            return list(value)
        ok = isinstance(value, list)
    elif kind in ("dict", "object"):
        ok = isinstance(value, dict)
    else:
        ok = True
    if not ok:
        raise Mismatch(f"{where}: expected type {kind}, got {type(value).__name__}")
    return value


def equal(value: Any, candidate: Any) -> bool:
    """BFCL equality: strings normalised, lists element-wise, dicts per key with
    acceptable-value lists (``""`` meaning the key may be absent)."""
    if isinstance(value, str) and isinstance(candidate, str):
        return normalise_string(value) == normalise_string(candidate)
    if isinstance(value, bool) or isinstance(candidate, bool):
        return type(value) is type(candidate) and value == candidate
    if isinstance(value, list) and isinstance(candidate, list | tuple):
        return len(value) == len(candidate) and all(
            equal(v, c) for v, c in zip(value, candidate, strict=True)
        )
    if isinstance(value, dict) and isinstance(candidate, dict):
        return _dict_equal(value, candidate)
    if isinstance(value, int | float) and isinstance(candidate, int | float):
        return value == candidate
    return bool(value == candidate)


def _dict_equal(value: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    for key in value:
        if key not in candidate:
            return False
    for key, options in candidate.items():
        choices = options if isinstance(options, list) else [options]
        if key not in value:
            if OMITTED not in choices:
                return False
            continue
        if not any(equal(value[key], c) for c in choices if c != OMITTED):
            return False
    return True
