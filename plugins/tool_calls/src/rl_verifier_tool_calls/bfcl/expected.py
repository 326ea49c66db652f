"""What one expected call of a BFCL task asks, read once per task: its declaration and its
possible answers, each parameter's rule for a Python value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rl_verifier_tool_calls.bfcl.values import (
    OMITTED,
    answer_type,
    is_variable,
    standardised_strings,
)

# Possible answer of one call: {function name: {param: [acceptable values]}}.
Answer = Mapping[str, Mapping[str, Sequence[Any]]]
Doc = Mapping[str, Any]

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
PYTHON_LISTS = ("array", "tuple")


class BfclDataError(ValueError):
    """The task's rows cannot be checked (BFCL's own checker stops on them)."""


class Expected:
    """One expected call: its answer entry and its declaration, read for checking."""

    __slots__ = (
        "acceptable_by_param",
        "allowed",
        "error",
        "name",
        "needed",
        "properties",
        "required",
        "rules",
    )

    def __init__(self, doc: Doc, answer: Answer, underscored: bool) -> None:
        self.error: str | None = None  # why the rows cannot be checked
        self.name: Any = None
        self.properties: Any = {}
        self.required: Any = ()
        self.acceptable_by_param: Mapping[str, Sequence[Any]] = {}
        self.rules: dict[str, Rule | str] = {}  # read on first use, or why there is none
        self.allowed: frozenset[str] | None = None
        self.needed: list[str] | None = None
        try:
            self.acceptable_by_param = _answer_params(answer)
            try:
                name = doc["name"]
                self.properties = doc["parameters"]["properties"]
                self.required = doc["parameters"]["required"]
            except (KeyError, TypeError):
                raise BfclDataError(
                    "each function needs a name and parameters with properties and required"
                ) from None
        except BfclDataError as exc:
            self.error = str(exc)
            return
        if underscored and "." in name:
            name = name.replace(".", "_")
        self.name = name
        # Parameters an output call may give (declared and in the answer), and those it must
        # give (not optional in the answer); None where the rows' shapes leave that to the
        # check itself.
        try:
            properties = self.properties
            self.allowed = frozenset(p for p in self.acceptable_by_param if p in properties)
        except TypeError:
            self.allowed = None
        try:
            self.needed = [p for p, a in self.acceptable_by_param.items() if OMITTED not in a]
        except TypeError:
            self.needed = None

    def rule(self, param: str) -> Rule:
        """What ``param`` (a declared parameter) asks of a Python value."""
        rule = self.rules.get(param)
        if rule is None:
            typed = _python_types(param, self.properties[param])
            acceptable = self.acceptable_by_param[param]
            rule = self.rules[param] = typed if isinstance(typed, str) else Rule(typed, acceptable)
        if isinstance(rule, str):
            raise BfclDataError(rule)
        return rule


class Rule:
    """One parameter of an expected call, as the Python check reads it: declared type, its
    Python type and item type, the acceptable values, their type and, for a string, their
    standardised forms."""

    __slots__ = (
        "acceptable",
        "declared",
        "item",
        "strings",
        "variable",
        "want",
        "wanted_by_answer",
    )

    def __init__(self, typed: tuple[str, type, type | None], acceptable: Sequence[Any]) -> None:
        self.declared, self.want, self.item = typed
        self.acceptable = acceptable
        self.wanted_by_answer = answer_type(acceptable)
        self.variable = is_variable(self.wanted_by_answer, self.want)
        self.strings = standardised_strings(acceptable) if self.want is str else None


def _python_types(param: str, spec: Any) -> tuple[str, type, type | None] | str:
    """The declared type, Python type and item type of a parameter; or why there are none."""
    try:
        try:
            declared = spec["type"]
        except (KeyError, TypeError):
            raise BfclDataError(f"parameter {param!r} declares no type") from None
        want = lookup(PYTHON_TYPES, declared)
        item = lookup(PYTHON_TYPES, item_type(spec)) if declared in PYTHON_LISTS else None
    except BfclDataError as exc:
        return str(exc)
    return declared, want, item


def _answer_params(answer: Answer) -> Mapping[str, Sequence[Any]]:
    if not isinstance(answer, dict) or not answer:
        raise BfclDataError("each ground-truth entry must be {function name: {params}}")
    params = next(iter(answer.values()))
    if not isinstance(params, dict):
        raise BfclDataError("a ground-truth entry's parameters must be an object")
    return params


def item_type(spec: Any) -> str:
    """The declared type of a list parameter's items."""
    try:
        return str(spec["items"]["type"])
    except (KeyError, TypeError):
        raise BfclDataError("a list parameter must declare its items' type") from None


def lookup(types: Mapping[str, type], name: str) -> type:
    """The Python type BFCL checks a declared type name as."""
    if name not in types:
        raise BfclDataError(f"BFCL has no rule for the declared type {name!r}")
    return types[name]
