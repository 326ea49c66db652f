"""Reward-hack screens: answers that must score 0 whatever math-verify concludes.

Each returns a reason (shown as ``info.reason``) or None. The text scans are linear; the size
estimate walks the parsed expression without evaluating it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sympy import (
    Add,
    Eq,
    Float,
    Integer,
    Mul,
    Number,
    Pow,
    Product,
    Rational,
    Symbol,
    UnevaluatedExpr,
)
from sympy.functions.combinatorial.factorials import binomial, factorial

MACRO = re.compile(
    r"\\(?:def|gdef|edef|xdef|let|futurelet|newcommand|renewcommand|providecommand|"
    r"DeclareMathOperator|newenvironment|renewenvironment|catcode|mathchardef|chardef)"
    r"(?![A-Za-z])"
)
WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|operatorname)\s*\{")
SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|\\left\b|\\right\b|\\displaystyle\b|\$|\\[()\[\]]")
NUMBER = (
    r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
    r"|\\[dt]?frac\{[^{}]*\}\{[^{}]*\})"
)
CANDIDATE = rf"(?:[A-Za-z]\w*\s*=\s*)?{NUMBER}"
SEPARATOR = r"\s*(?:,\s*(?:or\b)?|;|\bor\b|\\lor\b|\\vee\b)\s*"
ELLIPSIS = r"(?:\.\.\.|\\[lc]?dots\b|…)"
ANSWER_LIST = re.compile(rf"(?<![\w.]){CANDIDATE}(?:{SEPARATOR}(?:{CANDIDATE}|{ELLIPSIS}))+")
TRAILER = re.compile(r"[\s.!)\]}*]*")
NUMBER_NAME = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
SIMPLE_FRACTION = re.compile(r"\\frac\{(\d+)\}\{(\d+)\}")
COMPACT = re.compile(r"\s+|\\[,;:!]|\\left|\\right|\\displaystyle|\$")


def defines_macros(text: str) -> str | None:
    """LaTeX that (re)defines macros can make the parsed answer differ from the shown one."""
    match = MACRO.search(text)
    return f"defines LaTeX macros ({match.group(0)})" if match else None


def several_boxed(boxed: tuple[str, ...]) -> str | None:
    """Different ``\\boxed{}`` answers in one completion: a hedge."""
    distinct = {compact(b) for b in boxed}
    return f"{len(distinct)} different boxed answers" if len(distinct) > 1 else None


def lists_candidates(text: str, at_end_only: bool) -> str | None:
    """A list of candidate values ('1 or 2', 'x = 1, 2, 3, ...'). With ``at_end_only``, only
    a list that ends the text counts (for an answer read from a worked solution's tail)."""
    plain = SPACING.sub(" ", unwrap(text))
    found = None
    for match in ANSWER_LIST.finditer(plain):
        items = re.findall(rf"{NUMBER}|{ELLIPSIS}", match.group(0))
        if len(set(items)) < 2:
            continue
        if at_end_only and TRAILER.fullmatch(plain, match.end()) is None:
            continue
        found = match.group(0)
    return f"lists candidate answers ({found.strip()[:80]})" if found else None


def unwrap(text: str) -> str:
    """``\\text{...}``-style wrappers replaced by their contents."""
    out, position = [], 0
    while (match := WRAPPER.search(text, position)) is not None:
        out.append(text[position : match.start()])
        depth, index = 1, match.end()
        while index < len(text) and depth:
            if text[index] == "\\":
                index += 2
                continue
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        inner = text[match.end() : index - 1 if depth == 0 else index]
        out.append(f" {unwrap(inner)} ")
        position = index
    out.append(text[position:])
    return "".join(out)


def compact(text: str) -> str:
    """Text with spacing commands, ``$`` and ``\\left``/``\\right`` removed, for comparisons."""
    text = COMPACT.sub("", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return SIMPLE_FRACTION.sub(r"\1/\2", text)  # \frac{4}{8} is written 4/8 too


def copies_prompt(answers: list[str], references: list[str], prompt: str) -> str | None:
    """The answer is an expression written in the prompt (and the reference is not)."""
    where = compact(prompt)
    if any(compact(r) in where for r in references if compact(r)):
        return None
    for answer in answers:
        seen = compact(answer)
        operator = "\\" in seen or re.search(r"[-+*/^]", seen[1:])
        if len(seen) >= 3 and operator and seen in where:
            return f"restates the question ({answer.strip()[:80]})"
    return None


def is_number(value: Any) -> bool:
    """A plain number: 7, -2.5, 1/2, 50% (math-verify's percent form), \\text{7}."""
    if isinstance(value, Number):
        return True
    if isinstance(value, Symbol):  # \text{7} is read as a symbol named 7
        return NUMBER_NAME.fullmatch(value.name) is not None
    if isinstance(value, Mul) and len(value.args) == 2:
        a, b = value.args
        if isinstance(b, UnevaluatedExpr):  # X% is X * UnevaluatedExpr(1/100)
            return isinstance(a, Number)
        if isinstance(a, Integer) and isinstance(b, Pow):  # 1/2 read as plain text
            return isinstance(b.base, Integer) and b.exp == -1
        return a == -1 and is_number(b)
    return isinstance(value, Pow) and isinstance(value.base, Integer) and value.exp == -1


def unevaluated(answer: Any, gold: list[Any]) -> str | None:
    """An expression (3 + 4, 2^{10}, 10!) where every reference is a plain number."""
    if not gold or not all(is_number(g) for g in gold):
        return None
    value = answer.rhs if isinstance(answer, Eq) else answer  # x = 7, or 3 + 4 = 7
    if isinstance(value, str) or is_number(value):
        return None
    return "not evaluated: the reference is a number, the answer an expression"


def too_large(value: Any, max_digits: int) -> str | None:
    """A number with more than ``max_digits`` digits, estimated without evaluating it."""
    try:
        digits = _digits(value)
    except RecursionError:
        digits = math.inf
    if digits > max_digits:
        shown = "more than 10^15" if math.isinf(digits) else f"about {digits:.3g}"
        return f"too large to compare: {shown} digits (max_digits {max_digits})"
    return None


def nesting(text: str, max_depth: int) -> str | None:
    """Brackets nested deeper than ``max_depth``: parsing them costs time the model chose."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth = max(depth - 1, 0)
    if deepest > max_depth:
        return f"nested too deep to parse: {deepest} levels of brackets (max {max_depth})"
    return None


def too_many_terms(value: Any, max_terms: int) -> str | None:
    """An expression whose expansion would have more than ``max_terms`` terms
    (``(x+1)^{3000}``), estimated without expanding it."""
    try:
        terms = _terms(value)
    except RecursionError:
        terms = math.inf
    if terms > max_terms:
        shown = "more than 10^15" if math.isinf(terms) else f"about {terms:.3g}"
        return f"too large to compare: expands to {shown} terms (max_terms {max_terms})"
    return None


def _terms(value: Any) -> float:
    """An upper bound on the number of terms (weighted by degree) ``value`` expands to."""
    args: tuple[Any, ...] = getattr(value, "args", ())
    if not args or not getattr(value, "free_symbols", None):
        return 1.0
    if isinstance(value, Pow):
        base = _terms(value.base)
        exponent = value.exp
        if base <= 1:
            return 1.0  # a monomial stays one term
        if not isinstance(exponent, Integer):
            return base
        n = abs(int(exponent))
        if n > 10**6:
            return math.inf
        # multinomial count of the terms of (t terms)^n, times n for the size of coefficients
        return float(min(math.comb(n + int(min(base, 10**6)) - 1, n), 10**18) * max(n, 1))
    parts = [_terms(a) for a in args]
    if isinstance(value, Mul):
        return float(min(math.prod(parts), 10**18))
    return float(sum(parts))


def _digits(value: Any) -> float:
    """An upper bound on log10 of the magnitude of ``value``'s numbers (0 for symbols)."""
    if isinstance(value, Integer):
        return math.log10(max(abs(int(value)), 1))
    if isinstance(value, Rational):
        return math.log10(max(abs(int(value.p)), abs(int(value.q)), 1))
    if isinstance(value, Float):
        _sign, _mantissa, exponent, bits = value._mpf_
        return float(max(0, exponent + bits) * math.log10(2))
    args: tuple[Any, ...] = getattr(value, "args", ())
    if isinstance(value, Pow):
        base, exponent = (_digits(a) for a in value.args)
        if exponent > 15:
            return math.inf
        if not isinstance(value.base, Number):
            base = max(base, 1.0)  # a symbol's powers still grow with the exponent
        return base * 10**exponent
    if isinstance(value, binomial):
        n = 10 ** min(_digits(args[0]), 16.0)
        return n * math.log10(2) if n < 10**16 else math.inf
    if isinstance(value, Product):
        (_var, low, high) = value.limits[0]
        span = 10 ** max(_digits(low), _digits(high))
        return math.inf if span > 10**15 else span * max(_digits(args[0]), math.log10(span), 1)
    if isinstance(value, factorial):
        size = _digits(args[0])
        if size > 15:
            return math.inf
        n = 10**size
        return n * math.log10(max(n, 10))
    parts = [_digits(a) for a in args]
    if isinstance(value, Add):
        return max(parts, default=0.0) + 1
    return sum(parts)
