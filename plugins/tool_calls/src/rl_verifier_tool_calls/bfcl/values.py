"""BFCL's per-parameter rules: the type check, then the value check for its kind.

Every failure raises :class:`Mismatch` carrying BFCL's error type (``type_error:simple``,
``value_error:string``, ...). Comparisons use Python's ``==``, as BFCL's do: ``1 == 1.0``
and ``True == 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rl_verifier_tool_calls.bfcl.normalise import standardise

OMITTED = ""  # in a list of acceptable values: the parameter may be left out


class Mismatch(Exception):
    """The output fails BFCL's check; ``error_type`` is BFCL's name for the failure."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class CheckerStop(Exception):
    """A case on which BFCL's own checker raises instead of giving a verdict."""


def answer_type(acceptable: Sequence[Any]) -> type | None:
    """The type of the first acceptable value that is not ``""``."""
    for value in acceptable:
        if value != OMITTED:
            return type(value)
    return None


def check_type(
    param: str, value: Any, acceptable: Sequence[Any], declared: str, want: type, item: type | None
) -> bool:
    """BFCL's type check; returns whether the value is a *variable* (its acceptable values
    have another type than the declaration, so it is compared exactly).

    The value passes when its type is the declared one, or else the type of the acceptable
    values. Lists (``array``/``tuple``) also need their items to have the item type, or the
    type of the items of some acceptable list (any acceptable ``""`` lets them pass)."""
    return check_type_as(param, value, acceptable, declared, want, item, answer_type(acceptable))


def check_type_as(
    param: str,
    value: Any,
    acceptable: Sequence[Any],
    declared: str,
    want: type,
    item: type | None,
    wanted_by_answer: type | None,
) -> bool:
    """:func:`check_type`, given ``answer_type(acceptable)``."""
    variable = wanted_by_answer is not None and wanted_by_answer is not want
    nested_failed = False
    if type(value) is want:
        if item is None:
            return variable
        for option in acceptable:
            if _items_fit(param, value, option, item):
                return variable
        nested_failed = True
    if wanted_by_answer is not None and type(value) is wanted_by_answer:
        if nested_failed:
            raise Mismatch(
                "type_error:nested",
                f"{param!r}: the items of {value!r} do not have the type {declared} needs",
            )
        return True
    raise Mismatch(
        "type_error:simple",
        f"{param!r}: expected type {declared}, got {type(value).__name__} ({value!r})",
    )


def _items_fit(param: str, value: Any, option: Any, item: type) -> bool:
    if type(option) is not list:
        return True
    for element in value:
        try:
            check_type(param, element, option, item.__name__, item, None)
        except Mismatch:
            return False
    return True


def standardised_strings(acceptable: Sequence[Any]) -> frozenset[str]:
    """The acceptable strings, standardised."""
    return frozenset(standardise(option) for option in acceptable if type(option) is str)


def check_string(
    param: str, value: str, acceptable: Sequence[Any], standardised: frozenset[str] | None = None
) -> None:
    """Standardised, the value equals a standardised acceptable string (``standardised``:
    ``standardised_strings(acceptable)`` where the caller has it already)."""
    if standardised is None:
        standardised = standardised_strings(acceptable)
    if standardise(value) in standardised:
        return
    raise Mismatch("value_error:string", f"{param!r}: {value!r} is not one of {list(acceptable)!r}")


def _standardised_items(items: Any) -> list[Any]:
    # BFCL walks an acceptable list by index: a string is walked by character.
    if isinstance(items, dict):
        raise CheckerStop("a dict among the acceptable values of a list parameter")
    try:
        sequence = [items[i] for i in range(len(items))]
    except TypeError:
        raise CheckerStop(f"acceptable value {items!r} is not a list") from None
    return [standardise(v) if type(v) is str else v for v in sequence]


def check_list(param: str, value: Sequence[Any], acceptable: Sequence[Any]) -> None:
    """Top-level strings standardised, the list equals an acceptable list (items compared
    with ``==``: nested lists and dicts exactly)."""
    got = [standardise(v) if type(v) is str else v for v in value]
    if got not in [_standardised_items(option) for option in acceptable]:
        raise Mismatch(
            "value_error:list/tuple", f"{param!r}: {list(value)!r} is not one of {acceptable!r}"
        )


def check_dict(param: str, value: Any, acceptable: Sequence[Any]) -> None:
    """Some acceptable dict (``{key: [acceptable values]}``) fits: no unknown key, each value
    (a string standardised) among its key's values, and each missing key optional."""
    failure = Mismatch("dict_checker:unclear", f"{param!r}: no acceptable dict")
    for option in acceptable:
        if option == OMITTED:
            continue
        try:
            _dict_fits(param, value, option)
        except Mismatch as exc:
            failure = exc
            continue
        return
    raise failure


def _dict_fits(param: str, value: Any, option: Any) -> None:
    if not isinstance(value, dict):
        raise CheckerStop(f"{param!r}: {value!r} is compared as a dict but is not one")
    if not isinstance(option, dict):
        raise CheckerStop(f"{param!r}: acceptable value {option!r} is not a dict")
    failure: Mismatch | None = None
    for key, item in value.items():
        if key not in option:
            failure = Mismatch("value_error:dict_key", f"{param!r}: unexpected key {key!r}")
            break
        wanted = _standardised_items(option[key])
        got = standardise(item) if type(item) is str else item
        if got not in wanted:
            failure = Mismatch(
                "value_error:dict_value",
                f"{param!r}: key {key!r} has {item!r}, not one of {option[key]!r}",
            )
            break
    for key, values in option.items():
        try:
            optional = OMITTED in values
        except TypeError:
            raise CheckerStop(f"acceptable values of key {key!r} are not a list") from None
        if key not in value and not optional:
            failure = Mismatch("value_error:dict_key", f"{param!r}: missing key {key!r}")
            break
    if failure is not None:
        raise failure


def check_dict_list(param: str, value: Sequence[Any], acceptable: Sequence[Any]) -> None:
    """A list of dicts: some acceptable list of the same length whose dicts each fit."""
    failure = Mismatch("list_dict_checker:unclear", f"{param!r}: no acceptable list of dicts")
    for option in acceptable:
        try:
            size = len(option)
        except TypeError:
            raise CheckerStop(f"acceptable value {option!r} has no length") from None
        if len(value) != size:
            failure = Mismatch(
                "value_error:list_dict_count",
                f"{param!r}: {len(value)} dicts, expected {size}",
            )
            continue
        try:
            for index, element in enumerate(value):
                check_dict(param, element, [_item(option, index)])
        except Mismatch as exc:
            failure = exc
            continue
        return
    raise failure


def _item(option: Any, index: int) -> Any:
    try:
        return option[index]
    except (KeyError, TypeError):
        raise CheckerStop(f"acceptable value {option!r} cannot be indexed") from None
