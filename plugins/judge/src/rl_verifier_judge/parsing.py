"""Reading the judge's answer strictly: a final ``Score:`` line, one JSON object, a
``{label: score}`` object or a final ``Winner:`` line. Anything else, or a score outside
the scale, is a ``ParseProblem``: the verifier's failure, never a score of 0."""

from __future__ import annotations

import json
import math
import re
from typing import Any

SCORE_LINE = re.compile(
    r"\**\s*score\s*\**\s*[:=]\s*\**\s*(?P<n>[-+]?\d+(?:\.\d+)?)\s*"
    r"(?:/\s*(?P<of>\d+(?:\.\d+)?))?\s*\**\s*\.?\s*$",
    re.IGNORECASE,
)
WINNER_LINE = re.compile(
    r"\**\s*winner\s*\**\s*:\s*\**\s*(?P<w>a|b|tie)\s*\**\s*\.?\s*$", re.IGNORECASE
)
FENCE = re.compile(r"^```(?:json)?\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)


class ParseProblem(Exception):
    """The judge's reply does not follow the asked format."""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise ParseProblem("the judge's reply is empty")
    return lines[-1]


def _in_scale(value: float, scale: tuple[float, float]) -> float:
    low, high = scale
    if not math.isfinite(value) or not low <= value <= high:
        raise ParseProblem(f"score {value:g} is outside the scale [{low:g}, {high:g}]")
    return value


def parse_score_line(text: str, scale: tuple[float, float]) -> float:
    """The number on the reply's final line, ``Score: N`` (or ``Score: N/high``)."""
    match = SCORE_LINE.fullmatch(_last_line(text))
    if match is None:
        raise ParseProblem("the judge's reply does not end with a 'Score: N' line")
    if match["of"] is not None and float(match["of"]) != scale[1]:
        raise ParseProblem(f"the judge scored out of {match['of']}, not {scale[1]:g}")
    return _in_scale(float(match["n"]), scale)


def _json_object(text: str) -> dict[str, Any]:
    """The reply as one JSON object (a ```json fence around it allowed), nothing more."""
    body = text.strip()
    fenced = FENCE.fullmatch(body)
    if fenced is not None:
        body = fenced["body"].strip()
    try:
        value = json.loads(body)
    except ValueError:
        raise ParseProblem("the judge's reply is not one JSON object") from None
    if not isinstance(value, dict):
        raise ParseProblem("the judge's reply is JSON but not an object")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseProblem(f"{what} is {value!r}, not a number")
    return float(value)


def parse_score_json(text: str, scale: tuple[float, float]) -> float:
    """``{"score": N, ...}``."""
    value = _json_object(text)
    if "score" not in value:
        raise ParseProblem("the judge's JSON has no 'score'")
    return _in_scale(_number(value["score"], "'score'"), scale)


def parse_score(text: str, scale: tuple[float, float], answer_format: str) -> float:
    if answer_format == "json":
        return parse_score_json(text, scale)
    return parse_score_line(text, scale)


def parse_label_scores(
    text: str, labels: list[str], scale: tuple[float, float]
) -> dict[str, float]:
    """``{"A": 7, "B": 3, ...}`` with exactly ``labels``."""
    value = _json_object(text)
    if set(value) != set(labels):
        missing = sorted(set(labels) - set(value))
        extra = sorted(set(value) - set(labels))
        raise ParseProblem(
            f"the judge's labels do not match: missing {missing or 'none'}, "
            f"unexpected {extra or 'none'}"
        )
    return {name: _in_scale(_number(value[name], f"score of {name}"), scale) for name in labels}


def parse_winner(text: str) -> str:
    """``'A'``, ``'B'`` or ``'tie'`` from a final ``Winner:`` line."""
    match = WINNER_LINE.fullmatch(_last_line(text))
    if match is None:
        raise ParseProblem("the judge's reply does not end with a 'Winner: A|B|tie' line")
    found = match["w"].upper()
    return "tie" if found == "TIE" else found
