"""Literals read as what they denote, not through sympy's implicit multiplication.

math-verify reads ``0x4d`` as ``0*x*4*d`` (0), ``1e3`` as ``1*e*3`` and ``Friday1`` as
``Friday``; these helpers read such text first. Every scan is linear in the text's length.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

PREFIXED = re.compile(r"(?<![\w.])([-+]?)0([xXbBoO])([0-9a-fA-F_]+)(?![\w.])")
PREFIX_BASE = {"x": 16, "b": 2, "o": 8}
SCIENTIFIC = re.compile(
    r"(?P<mantissa>[-+]?(?:\d+\.?\d*|\.\d+))\s*"
    r"(?:[eE](?P<e>[-+]?\d+)|(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*\{?\s*(?P<p>[-+]?\d+)\s*\}?)"
)
E_TOKEN = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+(?![\w.])")
DECIMAL = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")
COMMAND = re.compile(r"\\[A-Za-z]+")
LETTER_DIGIT = re.compile(r"[A-Za-z]\d")
WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|texttt|textsf|mathrm|mathbf|mathit|mathtt|mathsf|"
    r"operatorname|mbox)\s*\{([^{}]*)\}"
)
DECORATION = re.compile(r"\$|\\[()\[\]]|\*\*|`|\\[,;:! ]|~|\\q?quad\b|\\displaystyle\b")
MAX_EXPONENT = 10_000  # |e| of a scientific literal read exactly; larger ones are not read


def plain(text: str) -> str:
    """``text`` without math delimiters, text wrappers, markdown bold, spacing and a final
    full stop: ``$\\text{Friday}$.`` is ``Friday``."""
    text = DECORATION.sub(" ", text)
    for _ in range(3):  # nested wrappers, bounded
        text = WRAPPER.sub(r" \1 ", text)
    text = " ".join(text.split())
    text = text.strip(" \t\"'")
    while text[-1:] in (".", "!"):
        text = text[:-1].rstrip()
    return text


def prefixed_integer(text: str) -> int | None:
    """The integer a whole ``0x``/``0b``/``0o`` literal denotes (``-0x3`` is -3), else None."""
    match = PREFIXED.fullmatch(text.strip())
    if match is None:
        return None
    sign, prefix, digits = match.groups()
    try:
        value = int(digits, PREFIX_BASE[prefix.lower()])
    except ValueError:
        return None
    return -value if sign == "-" else value


def integer_in_base(text: str, base: int) -> int | None:
    """A whole integer literal read in ``base`` (a prefixed one in its own base), else None.
    Digits above 9 are letters, in either case; a base subscript (``1a1_{16}``) is allowed."""
    text = re.sub(rf"_\{{?{base}\}}?$", "", text.strip())
    prefixed = prefixed_integer(text)
    if prefixed is not None:
        return prefixed
    if re.fullmatch(r"[-+]?[0-9A-Za-z]+", text) is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def decimal_integer(text: str) -> int | None:
    """A whole decimal or prefixed integer literal (``1,250`` too), else None."""
    prefixed = prefixed_integer(text)
    if prefixed is not None:
        return prefixed
    compact = (
        text.strip().replace(",", "") if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+", text) else text
    )
    return int(compact) if re.fullmatch(r"[-+]?\d+", compact.strip()) else None


def with_prefixed_as_decimal(text: str) -> str:
    """``text`` with every ``0x``/``0b``/``0o`` literal written in decimal, so that sympy
    never reads one as a product that is 0."""

    def decimal(match: re.Match[str]) -> str:
        value = prefixed_integer(match.group(0))
        return match.group(0) if value is None else str(value)

    return PREFIXED.sub(decimal, text)


def scientific(text: str) -> Decimal | None:
    """The value of a whole number in scientific notation (``1.2e-5``, ``1.2 \\times 10^{-5}``),
    else None."""
    match = SCIENTIFIC.fullmatch(text.strip())
    if match is None:
        return None
    exponent = int(match["e"] if match["e"] is not None else match["p"])
    if abs(exponent) > MAX_EXPONENT:
        return None
    return Decimal(match["mantissa"]).scaleb(exponent)


def real_literal(text: str) -> Decimal | None:
    """A whole real number written as digits (``-2.5``, ``1,250``, ``1e3``), else None."""
    value = scientific(text)
    if value is not None:
        return value
    compact = text.strip()
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", compact):
        compact = compact.replace(",", "")
    if DECIMAL.fullmatch(compact) is None:
        return None
    try:
        return Decimal(compact)
    except InvalidOperation:
        return None


def close(a: Decimal, b: Decimal, places: int) -> bool:
    """Equal to ``places`` significant digits (relative), so tiny numbers are not all 0."""
    if a == b:
        return True
    return abs(a - b) <= Decimal(10) ** -places * max(abs(a), abs(b))


def not_math(answer: str) -> str | None:
    """Why an answer is not read as math: a letter right before a digit (``Friday1``, ``3.0i1``,
    ``x2``), or scientific notation inside an expression (``2e-1``: e is also Euler's number)."""
    pair = juxtaposed(answer)
    if pair:
        return f"not math: {pair!r} (a letter before a digit) is not a product"
    token = E_TOKEN.search(answer)
    if token:
        return f"not math: scientific notation inside an expression ({token.group(0)!r})"
    return None


def juxtaposed(text: str) -> str | None:
    """A letter written right before a digit outside LaTeX commands (``Friday1``, ``3.0i1``,
    ``x2``): not math notation, which sympy would read as a product. Returns the pair."""
    bare = COMMAND.sub(" ", E_TOKEN.sub(" ", PREFIXED.sub(" ", text)))
    match = LETTER_DIGIT.search(bare)
    return match.group(0) if match else None
