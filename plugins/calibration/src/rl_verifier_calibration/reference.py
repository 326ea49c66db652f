"""Reading a binary outcome (0 or 1) from a task's reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Checked in this order; ForecastBench rows carry ``resolved_to`` (and ``resolved``).
OUTCOME_KEYS = ("outcome", "resolved_to", "resolution")
_WORDS = {"1": 1, "1.0": 1, "yes": 1, "true": 1, "0": 0, "0.0": 0, "no": 0, "false": 0}


class OutcomeError(ValueError):
    """The reference has no usable binary outcome: the task's fault, not the model's."""


def read_outcome(reference: Mapping[str, Any]) -> int:
    """The resolved outcome, 1 (happened / yes) or 0; raise ``OutcomeError`` otherwise."""
    if reference.get("resolved") is False:
        raise OutcomeError("the question is not resolved (reference.resolved is false)")
    found: dict[str, int] = {}
    for key in OUTCOME_KEYS:
        if key not in reference:
            continue
        value = as_binary(reference[key])
        if value is None:
            raise OutcomeError(f"reference.{key} is {short(reference[key])}, not 0/1 or yes/no")
        found[key] = value
    if not found:
        raise OutcomeError("reference has no 'outcome' (or 'resolved_to' / 'resolution')")
    if len(set(found.values())) > 1:
        raise OutcomeError(f"reference outcomes disagree: {found}")
    return next(iter(found.values()))


def as_binary(value: object) -> int | None:
    """0 or 1 from a bool, a number equal to 0 or 1, or a yes/no/true/false string."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return int(value) if value in (0, 1) else None
    if isinstance(value, str):
        return _WORDS.get(value.strip().lower())
    return None


def short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
