"""Reading one probability out of model text.

Sources are tried in priority order and the first one present decides:

1. tags: ``<probability>0.72</probability>`` (also ``<confidence>``, ``<forecast>``);
2. labels: ``Probability: 0.72`` (also ``Confidence:``, ``Forecast:``), to the end of the line;
3. free text: decimals (``0.72``, ``1e-3``) and percentages (``72%``, ``72 percent``).

Within the chosen source every number must name the same probability in [0, 1]:
``72%`` and ``0.72`` together are fine; hedges (``0.3 or 0.7``, ``between 60% and 80%``),
values outside [0, 1] and a source without any number are refused. In free text a bare
integer (a year, a count) is not a forecast. Reasoning before a closing ``</think>`` is
ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rl_verifier_calibration.markup import final_part, tag_bodies

# Values closer than this are the same forecast written twice (72% and 0.72).
SAME_VALUE_TOLERANCE = 1e-9

TAG_NAMES = ("probability", "confidence", "forecast")
# Possessive whitespace (*+, ++) keeps matching linear on long runs of spaces.
_LABEL = re.compile(
    r"(?<!\w)(?:final\s++)?(?:probability|confidence|forecast)"
    r"(?:[ \t]++(?:level|score|estimate)\b)?[ \t]*+(?:\([^)\n]{0,40}\)[ \t]*+)?"
    r"(?:\*\*|__)?[ \t]*+[:=][ \t]*+(?:\*\*|__)?(?P<body>[^\n]*)",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\w.$€£¥])(?P<sign>[-+\u2212])?(?P<num>(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)"
    r"(?!\.?\d)"
    r"(?P<pct>[ \t]*+(?:%|percent\b|per[ \t]?cent\b))?",
    re.IGNORECASE,
)
# Between a bare integer and a percentage, these make the integer a percentage too ("60-80%").
_RANGE_JOIN = re.compile(r"[ \t]*+(?:-|\u2013|\u2014|to|or|and)[ \t]*+", re.IGNORECASE)


class ForecastError(ValueError):
    """The text holds no single usable probability; the message says why."""


@dataclass(frozen=True)
class Forecast:
    """A probability and where it was found (``tag``, ``label`` or ``text``)."""

    value: float
    source: str


@dataclass(frozen=True)
class Number:
    """One number as written: its value, whether it was a percentage or a bare integer."""

    value: float
    raw: str
    percent: bool
    integer: bool


def extract_probability(text: str, accept: str = "any") -> Forecast:
    """The one probability the text states; raise ``ForecastError`` otherwise.

    ``accept`` narrows the sources: ``tag`` (tags only), ``label`` (tags or labels) or
    ``any`` (tags, labels or free text).
    """
    text = final_part(text)
    tags = tag_bodies(text, *TAG_NAMES)
    if tags:
        numbers = [n for body in tags for n in scan_numbers(body)]
        return Forecast(agree(numbers, "tag"), "tag")
    if accept == "tag":
        raise ForecastError("no <probability>...</probability> tag")
    labels = list(_LABEL.finditer(text))
    if labels:
        numbers = []
        for label in labels:
            found = scan_numbers(label["body"])
            # Later bare integers are counts or years, unless they read as 0 or 1 ("1 or 0").
            numbers += [
                n for i, n in enumerate(found) if i == 0 or not n.integer or n.value in (0, 1)
            ]
        return Forecast(agree(numbers, "label"), "label")
    if accept == "label":
        raise ForecastError("no probability tag or 'Probability:' label")
    numbers = [n for n in scan_numbers(text) if not n.integer]
    return Forecast(agree(numbers, "text"), "text")


def scan_numbers(text: str) -> list[Number]:
    """Every decimal, integer and percentage in ``text``, in order."""
    matches = list(_NUMBER.finditer(text))
    numbers: list[Number] = []
    for i, match in enumerate(matches):
        tail = text[match.end() : match.end() + 1]
        if not match["pct"] and tail.isalpha():
            continue  # units and names: "2.5mg", "3x", "4th"
        after = matches[i + 1] if i + 1 < len(matches) else None
        percent = bool(match["pct"]) or joins_percentage(text, match, after)
        value = float(match["num"]) * (-1.0 if match["sign"] in ("-", "\u2212") else 1.0)
        numbers.append(
            Number(
                value=value / 100.0 if percent else value,
                raw=match.group().strip()[:40],
                percent=percent,
                integer=match["num"].isdigit() and not percent,
            )
        )
    return numbers


def joins_percentage(text: str, match: re.Match[str], after: re.Match[str] | None) -> bool:
    """Whether a bare integer is the first end of a percentage range ("60-80%", "60 to 80%")."""
    if after is None or not after["pct"] or after["sign"] or not match["num"].isdigit():
        return False
    return _RANGE_JOIN.fullmatch(text, match.end(), after.start()) is not None


def agree(numbers: list[Number], source: str) -> float:
    """The single value all ``numbers`` state; raise ``ForecastError`` on none, several or
    one outside [0, 1]."""
    if not numbers:
        raise ForecastError(f"no probability in the {source}")
    for number in numbers:
        if not (math.isfinite(number.value) and 0.0 <= number.value <= 1.0):
            raise ForecastError(f"probability {number.raw!r} in the {source} is outside [0, 1]")
    first = numbers[0].value
    if any(abs(n.value - first) > SAME_VALUE_TOLERANCE for n in numbers):
        shown = ", ".join(repr(n.raw) for n in numbers[:4])
        raise ForecastError(f"several different probabilities in the {source}: {shown}")
    return first
