"""BFCL's AST check: output calls against a possible-answer row and the function docs.

Calls are ``(name, {param: value})`` pairs as decoded from the output. A failure is a
:class:`Mismatch` with BFCL's error type; a task BFCL cannot check (a declaration without
``required``, an unknown type, an answer naming an undeclared function) raises
:class:`BfclDataError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from rl_verifier_tool_calls.bfcl.categories import Category, Language
from rl_verifier_tool_calls.bfcl.expected import (
    Answer,
    BfclDataError,
    Doc,
    Expected,
    Rule,
    item_type,
    lookup,
)
from rl_verifier_tool_calls.bfcl.java import JAVA_TYPES, JavaTypeError, java_value
from rl_verifier_tool_calls.bfcl.javascript import JS_TYPES, JsTypeError, js_value
from rl_verifier_tool_calls.bfcl.normalise import standardise
from rl_verifier_tool_calls.bfcl.values import (
    OMITTED,
    Mismatch,
    answer_type,
    check_dict,
    check_dict_list,
    check_list,
    check_string,
    is_variable,
    type_mismatch,
)

Call = tuple[Any, Mapping[Any, Any]]
CONVERTED_LISTS = ("Array", "ArrayList", "array")


def check(
    category: Category,
    calls: Sequence[Call],
    expected: Sequence[Answer],
    functions: Sequence[Doc],
    underscored: bool = False,
    any_order: bool = False,
) -> Mismatch | None:
    """Why ``calls`` fail ``category``'s checker, or None when they pass.

    ``underscored``: dotted declared names must be written with underscores (BFCL's
    ``underscore_to_dot``); ``any_order``: a departure from BFCL, parallel calls matched by
    any one-to-one pairing instead of BFCL's in-order greedy matching. Failures are returned,
    not raised: a raised one costs a traceback entry per frame it passes, and most outputs
    an RL run checks fail."""
    function = _function(category.language, underscored)
    if category.checker == "parallel":
        miscount = _miscount(calls, expected, "parallel_function_checker_no_order")
        if miscount is not None:
            return miscount
        match = _match_any_pairing if any_order else _match_greedily
        return match(calls, expected, functions, function)
    if category.checker == "multiple":
        miscount = _miscount(calls, expected, "multiple_function_checker")
        if miscount is not None:
            return miscount
        if not expected:
            raise BfclDataError("a multiple question needs a ground truth")
        doc = _describe(functions, _answer_name(expected[0]))
        return function.check(doc, calls[0], expected[0])
    if len(calls) != 1:
        return Mismatch("simple_function_checker:wrong_count", _count(1, len(calls)))
    if not functions or not expected:
        raise BfclDataError("a simple question needs a function and a ground truth")
    return function.check(functions[0], calls[0], expected[0])


def _miscount(calls: Sequence[Call], expected: Sequence[Answer], checker: str) -> Mismatch | None:
    if len(calls) != len(expected):
        return Mismatch(f"{checker}:wrong_count", _count(len(expected), len(calls)))
    return None


def _count(expected: int, got: int) -> str:
    return f"wrong number of functions: expected {expected}, got {got}"


def _answer_name(answer: Answer) -> str:
    if not isinstance(answer, dict) or not answer:
        raise BfclDataError("each ground-truth entry must be {function name: {params}}")
    return str(next(iter(answer)))


def _describe(functions: Sequence[Doc], name: str) -> Doc:
    for doc in functions:
        if isinstance(doc, dict) and doc.get("name") == name:
            return doc
    raise BfclDataError(f"the ground truth names {name!r}, which the question does not declare")


def _match_greedily(
    calls: Sequence[Call],
    expected: Sequence[Answer],
    functions: Sequence[Doc],
    function: Function,
) -> Mismatch | None:
    """BFCL: each expected call, in order, takes the first unused output call that passes."""
    used: set[int] = set()
    for position, answer in enumerate(expected):
        doc = _describe(functions, _answer_name(answer))
        first: Mismatch | None = None
        for index, call in enumerate(calls):
            if index in used:
                continue
            failure = function.check(doc, call, answer)
            if failure is not None:
                first = first or failure
                continue
            used.add(index)
            break
        else:
            return _no_match(position, first)
    return None


def _match_any_pairing(
    calls: Sequence[Call],
    expected: Sequence[Answer],
    functions: Sequence[Doc],
    function: Function,
) -> Mismatch | None:
    """Departure: some one-to-one pairing of expected and output calls passes."""
    fits: list[list[Mismatch | None]] = []
    for answer in expected:
        doc = _describe(functions, _answer_name(answer))
        fits.append([function.check(doc, call, answer) for call in calls])
    used: set[int] = set()

    def assign(row: int) -> bool:
        if row == len(expected):
            return True
        for col, failure in enumerate(fits[row]):
            if failure is None and col not in used:
                used.add(col)
                if assign(row + 1):
                    return True
                used.discard(col)
        return False

    if assign(0):
        return None
    for position, row in enumerate(fits):
        if all(failure is not None for failure in row):
            return _no_match(position, next(f for f in row if f is not None))
    return Mismatch(
        "parallel_function_checker_no_order:cannot_find_match",
        "the output calls cannot be paired one-to-one with the expected calls",
    )


def _no_match(position: int, first: Mismatch | None) -> Mismatch:
    detail = f" (first failure: {first.error_type}: {first})" if first else ""
    return Mismatch(
        "parallel_function_checker_no_order:cannot_find_match",
        f"no output call matches expected call {position}{detail}",
    )


@lru_cache(maxsize=8)
def _function(language: Language, underscored: bool) -> Function:
    return Function(language, underscored)


class Function:
    """BFCL's check of one output call against one expected call, for one language."""

    def __init__(self, language: Language, underscored: bool) -> None:
        self.language = language
        self.underscored = underscored
        self.python = language == "python"
        # What one declaration and one answer entry ask, read once (a task is checked once
        # per sample of it); kept with the objects, so that their ids stay theirs.
        self._expected: dict[tuple[int, int], tuple[Doc, Answer, Expected]] = {}

    def check(self, doc: Doc, call: Call, answer: Answer) -> Mismatch | None:
        """Name, required parameters, each given parameter's type and value, omissions: the
        first failure, or None."""
        key = (id(doc), id(answer))
        found = self._expected.get(key)
        if found is not None and found[0] is doc and found[1] is answer:
            expected = found[2]
        else:
            expected = Expected(doc, answer, self.underscored)
            if len(self._expected) >= MAX_EXPECTED:
                self._expected.pop(next(iter(self._expected)), None)
            self._expected[key] = (doc, answer, expected)
        if expected.error is not None:
            raise BfclDataError(expected.error)
        name = expected.name
        properties = expected.properties
        acceptable_by_param = expected.acceptable_by_param
        called, arguments = call
        if called != name:
            return Mismatch(
                "simple_function_checker:wrong_func_name",
                f"function {name!r} not found in the output (got {called!r})",
            )
        for param in expected.required:
            if param not in arguments:
                return Mismatch(
                    "simple_function_checker:missing_required",
                    f"missing required parameter {param!r}",
                )
        allowed = expected.allowed
        python = self.python
        rules = expected.rules
        for param, value in arguments.items():
            if (
                param not in allowed
                if allowed is not None
                else param not in properties or param not in acceptable_by_param
            ):
                return Mismatch(
                    "simple_function_checker:unexpected_param", f"unexpected parameter {param!r}"
                )
            if python:
                rule = rules.get(param)
                if type(rule) is not Rule:
                    rule = expected.rule(param)
                failure = _check_python(param, value, rule)
            else:
                failure = self._check_param(
                    param, value, properties[param], acceptable_by_param[param]
                )
            if failure is not None:
                return failure
        needed = expected.needed
        for param in (
            needed if needed is not None else _not_optional(acceptable_by_param, arguments)
        ):
            if param not in arguments:
                return Mismatch(
                    "simple_function_checker:missing_optional",
                    f"parameter {param!r} is not given and not optional",
                )
        return None

    def _check_param(
        self, param: str, value: Any, spec: Any, acceptable: Sequence[Any]
    ) -> Mismatch | None:
        """Java or JavaScript: the value's source text converted, then checked."""
        try:
            declared = spec["type"]
        except (KeyError, TypeError):
            raise BfclDataError(f"parameter {param!r} declares no type") from None
        want = lookup(JAVA_TYPES if self.language == "java" else JS_TYPES, declared)
        if type(value) is not str:
            return Mismatch(
                "type_error:java" if self.language == "java" else "type_error:js",
                f"{param!r}: expected a String holding {declared} source, got "
                f"{type(value).__name__} ({value!r})",
            )
        value, item = self._converted(value, declared, spec)
        if declared == "tuple" and type(value) is tuple:
            value = list(value)
        wanted_by_answer = answer_type(acceptable)
        failure = type_mismatch(param, value, acceptable, declared, want, item, wanted_by_answer)
        if failure is not None:
            return failure
        variable = is_variable(wanted_by_answer, want)
        return _check_kind(param, value, want, item, variable, acceptable, None)

    def _converted(self, value: str, declared: str, spec: Any) -> tuple[Any, type | None]:
        """Java or JavaScript source text as the checker compares it, and its item type."""
        types = JAVA_TYPES if self.language == "java" else JS_TYPES
        convert = java_value if self.language == "java" else js_value
        try:
            if declared in CONVERTED_LISTS:
                item_name = item_type(spec)
                return convert(value, declared, item_name), lookup(types, item_name)
            return convert(value, declared), None
        except (JavaTypeError, JsTypeError) as exc:
            raise BfclDataError(str(exc)) from None


MAX_EXPECTED = 4096


def _check_python(param: str, value: Any, rule: Rule) -> Mismatch | None:
    declared, want, item = rule.declared, rule.want, rule.item
    kind = type(value)
    if kind is tuple and declared == "tuple":
        value = list(value)
    elif kind is int and declared == "float":
        value = float(value)
    elif kind is want and item is None:  # the commonest case: a scalar of the declared type
        if rule.variable:
            return None if value in rule.acceptable else _not_among(param, value, rule.acceptable)
        if rule.strings is not None and standardise(value) in rule.strings:
            return None
    failure = type_mismatch(
        param, value, rule.acceptable, declared, want, item, rule.wanted_by_answer
    )
    if failure is not None:
        return failure
    return _check_kind(param, value, want, item, rule.variable, rule.acceptable, rule.strings)


def _check_kind(
    param: str,
    value: Any,
    want: type,
    item: type | None,
    variable: bool,
    acceptable: Any,
    strings: frozenset[str] | None,
) -> Mismatch | None:
    """The value check for the value's kind (a variable's value is compared exactly)."""
    if not variable:
        if want is dict:
            return check_dict(param, value, acceptable)
        if want is list and item is dict:
            return check_dict_list(param, value, acceptable)
        if want is str:
            return check_string(param, value, acceptable, strings)
        if want is list:
            return check_list(param, value, acceptable)
    if value not in acceptable:
        return _not_among(param, value, acceptable)
    return None


def _not_among(param: str, value: Any, acceptable: Any) -> Mismatch:
    return Mismatch(
        "value_error:others", f"{param!r}: {value!r} is not one of {list(acceptable)!r}"
    )


def _not_optional(
    acceptable_by_param: Mapping[str, Sequence[Any]], arguments: Mapping[Any, Any]
) -> Iterator[str]:
    """The parameters left out that the answer does not let be left out, one at a time."""
    for param, acceptable in acceptable_by_param.items():
        if param not in arguments and OMITTED not in acceptable:
            yield param
