"""The fast paths decide only what math-verify would decide the same way: where a quick verdict
is given it is math-verify's, on every pair of a grid of numbers and expressions; a literal read
without parsing is what math-verify's parser returns for it."""

from __future__ import annotations

import itertools

import pytest
from math_verify import parse, verify
from sympy import srepr

from rl_verifier_math.compare import parse_answer
from rl_verifier_math.fastpath import quick_verdict
from rl_verifier_math.grading import known_reading

GRID = [
    "42", "42.0", "-42", "4.2", "0", "1", "\\frac{1}{2}", "0.5", "0.500001", "\\frac{1}{3}",
    "0.333333", "\\frac{14}{3}", "4.67", "\\sqrt{2}", "1.414214", "\\frac{\\sqrt{3}}{2}",
    "\\pi", "2\\pi", "e^{2}", "\\ln 2", "x^2+2x+1", "(x+1)^2", "(x-1)^2", "2x+1",
    "\\frac{x}{x+1}", "1-\\frac{1}{x+1}", "a^2-b^2", "(a-b)(a+b)", "\\sqrt{x^2}", "|x|",
    "\\sin^2 x + \\cos^2 x", "3n+2", "3m+2", "x^{-1}",
]  # fmt: skip


def test_quick_verdicts_are_math_verifys() -> None:
    values = [parse(f"${text}$")[0] for text in GRID]
    decided = 0
    for (a, x), (b, y) in itertools.product(zip(GRID, values, strict=True), repeat=2):
        quick = quick_verdict(x, y, 6)
        if quick is not None:
            decided += 1
            assert quick == bool(verify([x], [y])), (a, b, quick)
    assert decided >= len(GRID) ** 2 * 0.7  # most pairs skip simplify


@pytest.mark.parametrize(
    "literal", ["7", "-7", "007", "1250", "0.125", "-0.5", "12.50", "1.7574418454559584", "3.0"]
)
@pytest.mark.parametrize("source", ["boxed", "answer_line"])
def test_literals_read_without_parsing_are_what_the_parser_returns(
    literal: str, source: str
) -> None:
    known = known_reading(literal, [], [])
    assert known is not None
    assert [srepr(v) for v in known[0]] == [srepr(v) for v in parse_answer(literal, source, True)]
