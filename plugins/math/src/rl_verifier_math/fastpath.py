"""Verdicts math-verify would reach, found without ``simplify``.

For two expressions in symbols (not equations, sets, matrices or percentages), math-verify
ends in ``simplify(gold - answer) == 0``, the costly step. Two cheaper checks settle most pairs
the same way first: different values at a sample point mean ``simplify`` cannot find 0 (not
equal), and polynomials whose difference expands to 0 are equal. Anything else is left to
math-verify.
"""

from __future__ import annotations

from typing import Any

from sympy import Expr, Float, MatrixBase, Number, Rational, Set, Symbol, Tuple, UnevaluatedExpr
from sympy.core.relational import Relational

POINTS = (Rational(7, 11), Rational(-13, 17))  # where the symbols are put to compare values
DIGITS = 30  # working precision of the sample values
TOLERANCE = 1e-12  # relative difference below which sample values count as equal
MAX_OPS = 400  # larger expressions are left to math-verify


def quick_verdict(gold: Any, answer: Any, float_rounding: int) -> bool | None:
    """True or False where it is certain what math-verify would say; else None."""
    if not (plain_expr(gold) and plain_expr(answer)):
        return None
    symbols = gold.free_symbols | answer.free_symbols
    if gold.count_ops() > MAX_OPS or answer.count_ops() > MAX_OPS:
        return None
    try:
        if not symbols:
            return constant_verdict(gold, answer, float_rounding)
        if not all(any_real_value(s) for s in symbols):
            return None  # a positive or integer symbol may not take every sample value
        difference = gold - answer
        if difference.is_polynomial(*symbols) and difference.expand() == 0:
            return True
        for point in POINTS:
            values = {s: point + index for index, s in enumerate(sorted(symbols, key=str))}
            if differs(difference.subs(values), gold.subs(values)):
                return False
    except (ArithmeticError, TypeError, ValueError, RecursionError):
        return None
    return None


def constant_verdict(gold: Any, answer: Any, float_rounding: int) -> bool | None:
    """Two numbers (no symbols) as math-verify compares them: equal values, or equal rounded to
    ``float_rounding`` places where one is a float; clearly different values are not equal."""
    if not (gold.is_finite and answer.is_finite):
        return None
    if isinstance(gold, Number) and isinstance(answer, Number):
        if (gold - answer).is_zero:  # 42 = 42.0: math-verify's simplify(gold - answer) is 0
            return True
        if isinstance(gold, Float) or isinstance(answer, Float):
            return bool(gold.round(float_rounding) == answer.round(float_rounding))
        return False
    if isinstance(gold, Float) or isinstance(answer, Float):
        return None  # math-verify rounds the other side: left to it
    return False if differs(gold - answer, gold) else None


def any_real_value(symbol: Any) -> bool:
    """A symbol that may take any real value (no sign, integer or nonzero assumption)."""
    facts = (symbol.is_positive, symbol.is_negative, symbol.is_integer, symbol.is_zero)
    return symbol.is_real is not False and all(fact is None for fact in facts)


def plain_expr(value: Any) -> bool:
    """A sympy expression that math-verify compares by value (no relation, set, matrix,
    percentage, lone symbol)."""
    if not isinstance(value, Expr) or isinstance(value, Symbol):
        return False
    if isinstance(value, Relational | Set | Tuple | MatrixBase):
        return False
    return not value.has(UnevaluatedExpr)


def differs(difference: Any, scale: Any) -> bool:
    """The difference's value at a point is finite, real and clearly not 0."""
    value = difference.evalf(DIGITS)
    size = scale.evalf(DIGITS)
    if not (value.is_number and value.is_real and value.is_finite):
        return False
    if not (size.is_number and size.is_finite):
        return False
    return bool(abs(value) > TOLERANCE * (1 + abs(size)))
