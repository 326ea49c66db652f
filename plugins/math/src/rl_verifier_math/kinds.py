"""Answer kinds: which references are math (for sympy) and which are compared as literals.

A reference is read, in this order, as: an integer in the task's ``base``; a ``0x``/``0b``/``0o``
integer; a number in scientific notation; a time or duration (``06:09``, ``3 days, 01:00``);
a factorization (``2 \\times 2 \\times 5``); a word answer (``Friday``, ``Yes``); an identifier
(``1a1``, ``x2``: a letter right before a digit); else math. Only math goes to math-verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from rl_verifier_math.literals import (
    close,
    decimal_integer,
    integer_in_base,
    juxtaposed,
    plain,
    prefixed_integer,
    real_literal,
    scientific,
)

Kind = Literal["math", "integer", "scientific", "time", "factors", "text", "identifier"]
TIME = re.compile(r"(?:(\d+) days?,? )?(\d{1,2}):([0-5]\d)(?::([0-5]\d(?:\.\d{1,9})?))?")
TIMES = r"\s*(?:×|\\times|\\cdot|·|\*)\s*"
FACTORS = re.compile(rf"\d+(?:{TIMES}\d+)+")
FACTOR = re.compile(r"(\d+)(?:\s*(?:\^|\*\*)\s*\{?\s*(\d{1,3})\s*\}?)?")
WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*(?: [A-Za-z][A-Za-z'’-]*)*")
SHORT_WORDS = frozenset({"yes", "no", "true", "false", "none"})
MATH_WORDS = frozenset({"pi", "inf", "infty", "infinity", "oo", "nan", "sin", "cos", "tan"})
MAX_FACTORS = 64


@dataclass(frozen=True)
class Reading:
    """A reference answer's kind and the value compared (None for math)."""

    kind: Kind
    value: Any = None


def reference_reading(text: str, base: int | None) -> Reading | None:
    """How a reference answer is compared; None for a reference that is not in ``base``."""
    bare = plain(text)
    if base is not None:
        value = integer_in_base(bare, base)
        return Reading("integer", value) if value is not None else None
    prefixed = prefixed_integer(bare)
    if prefixed is not None:
        return Reading("integer", prefixed)
    number = scientific(bare)
    if number is not None:
        return Reading("scientific", number)
    if (time := TIME.fullmatch(bare)) is not None:
        return Reading("time", clock(time))
    if FACTORS.fullmatch(bare):
        return Reading("factors", factors(bare))
    if is_word_answer(bare):
        return Reading("text", bare.casefold())
    if juxtaposed(bare) is not None and "\\" not in bare:
        return Reading("identifier", bare)
    return Reading("math")


def is_word_answer(text: str) -> bool:
    """Words, not math: at least one of three letters or more (``Friday``, ``odd``, ``Yes``),
    or yes/no/true/false/none; never a math name (``pi``, ``infinity``)."""
    if WORDS.fullmatch(text) is None:
        return False
    lowered = text.casefold()
    if lowered in SHORT_WORDS:
        return True
    if lowered in MATH_WORDS:
        return False
    return any(len(word) >= 3 for word in lowered.split())


def clock(match: re.Match[str]) -> Decimal:
    """A time (or duration) in seconds: ``06:09`` is 22140, ``2 days, 00:01:00.5`` 172860.5."""
    days, hours, minutes, seconds = match.groups()
    total = Decimal(seconds or 0) + 60 * int(minutes) + 3600 * int(hours)
    return total + 86400 * int(days or 0)


def factors(text: str) -> tuple[int, ...] | None:
    """The sorted factors of a product of integers (``7^2`` counts twice), else None."""
    found: list[int] = []
    for part in re.split(TIMES, text.strip()):
        match = FACTOR.fullmatch(part.strip())
        if match is None:
            return None
        count = int(match[2]) if match[2] else 1
        if len(found) + count > MAX_FACTORS:
            return None
        found.extend([int(match[1])] * count)
    return tuple(sorted(found))


def literal_match(reading: Reading, answer: str, base: int | None, places: int) -> bool:
    """Whether the answer (as written) is the reference of a literal kind."""
    bare = plain(answer)
    if reading.kind == "integer":
        value = integer_in_base(bare, base) if base is not None else decimal_integer(bare)
        return value is not None and value == reading.value
    if reading.kind == "scientific":
        number = real_literal(bare)
        return number is not None and close(number, reading.value, places)
    if reading.kind == "time":
        time = TIME.fullmatch(bare)
        return time is not None and clock(time) == reading.value
    if reading.kind == "factors":
        return bool(factors(bare) == reading.value)
    if reading.kind == "text":
        return bool(bare.casefold() == reading.value)
    return " ".join(bare.split()) == " ".join(str(reading.value).split())
