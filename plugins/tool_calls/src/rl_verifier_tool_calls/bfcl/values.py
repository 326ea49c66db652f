"""BFCL's per-parameter rules: the type check, then the value check for its kind.

Every failure is a :class:`Mismatch` carrying BFCL's error type (``type_error:simple``,
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


def is_variable(wanted_by_answer: type | None, want: type) -> bool:
    """Whether values of a parameter are *variables*: its acceptable values (their type
    ``wanted_by_answer``) have another type than the declared ``want``, so a value is
    compared exactly."""
    return wanted_by_answer is not None and wanted_by_answer is not want


def type_mismatch(
    param: str,
    value: Any,
    acceptable: Sequence[Any],
    declared: str,
    want: type,
    item: type | None,
    wanted_by_answer: type | None,
) -> Mismatch | None:
    """BFCL's type check: the failure, or None (``wanted_by_answer``: ``answer_type(acceptable)``).

    The value passes when its type is the declared one, or else the type of the acceptable
    values. Lists (``array``/``tuple``) also need their items to have the item type, or the
    type of the items of some acceptable list (any acceptable ``""`` lets them pass)."""
    nested_failed = False
    if type(value) is want:
        if item is None:
            return None
        for option in acceptable:
            if _items_fit(param, value, option, item):
                return None
        nested_failed = True
    if wanted_by_answer is not None and type(value) is wanted_by_answer:
        if nested_failed:
            return Mismatch(
                "type_error:nested",
                f"{param!r}: the items of {value!r} do not have the type {declared} needs",
            )
        return None
    return Mismatch(
        "type_error:simple",
        f"{param!r}: expected type {declared}, got {type(value).__name__} ({value!r})",
    )


def _items_fit(param: str, value: Any, option: Any, item: type) -> bool:
    if type(option) is not list:
        return True
    wanted_by_answer = answer_type(option)
    for element in value:
        if type_mismatch(param, element, option, item.__name__, item, None, wanted_by_answer):
            return False
    return True


def standardised_strings(acceptable: Sequence[Any]) -> frozenset[str]:
    """The acceptable strings, standardised."""
    return frozenset(standardise(option) for option in acceptable if type(option) is str)


def check_string(
    param: str, value: str, acceptable: Sequence[Any], standardised: frozenset[str] | None = None
) -> Mismatch | None:
    """Standardised, the value equals a standardised acceptable string (``standardised``:
    ``standardised_strings(acceptable)`` where the caller has it already); the failure, or
    None. (The checks here return their failure: raised, it would cost a traceback entry per
    frame it passes, and most outputs an RL run checks fail.)"""
    if standardised is None:
        standardised = standardised_strings(acceptable)
    if standardise(value) in standardised:
        return None
    return Mismatch(
        "value_error:string", f"{param!r}: {value!r} is not one of {list(acceptable)!r}"
    )


def _standardised_items(items: Any) -> list[Any]:
    # BFCL walks an acceptable list by index: a string is walked by character.
    if isinstance(items, dict):
        raise CheckerStop("a dict among the acceptable values of a list parameter")
    try:
        sequence = [items[i] for i in range(len(items))]
    except TypeError:
        raise CheckerStop(f"acceptable value {items!r} is not a list") from None
    return [standardise(v) if type(v) is str else v for v in sequence]


def check_list(param: str, value: Sequence[Any], acceptable: Sequence[Any]) -> Mismatch | None:
    """Top-level strings standardised, the list equals an acceptable list (items compared
    with ``==``: nested lists and dicts exactly); the failure, or None."""
    got = [standardise(v) if type(v) is str else v for v in value]
    if got in [_standardised_items(option) for option in acceptable]:
        return None
    return Mismatch(
        "value_error:list/tuple", f"{param!r}: {list(value)!r} is not one of {acceptable!r}"
    )


def check_dict(param: str, value: Any, acceptable: Sequence[Any]) -> Mismatch | None:
    """Some acceptable dict (``{key: [acceptable values]}``) fits: no unknown key, each value
    (a string standardised) among its key's values, and each missing key optional; the
    failure, or None."""
    failure = Mismatch("dict_checker:unclear", f"{param!r}: no acceptable dict")
    for option in acceptable:
        if option == OMITTED:
            continue
        misfit = _dict_misfit(param, value, option)
        if misfit is None:
            return None
        failure = misfit
    return failure


def _dict_misfit(param: str, value: Any, option: Any) -> Mismatch | None:
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
    return failure


def check_dict_list(param: str, value: Sequence[Any], acceptable: Sequence[Any]) -> Mismatch | None:
    """A list of dicts: some acceptable list of the same length whose dicts each fit; the
    failure, or None."""
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
        misfit = None
        for index, element in enumerate(value):
            misfit = check_dict(param, element, [_item(option, index)])
            if misfit is not None:
                break
        if misfit is None:
            return None
        failure = misfit
    return failure


def _item(option: Any, index: int) -> Any:
    try:
        return option[index]
    except (KeyError, TypeError):
        raise CheckerStop(f"acceptable value {option!r} cannot be indexed") from None
