"""The two-stage parse (rl_verifier_math.quickparse) builds what math-verify's own parse builds,
on every reference and answer of the parity set and on the fast-path grid; outside its block
math-verify parses as shipped."""

from __future__ import annotations

import json
from pathlib import Path

import math_verify.parser
from antlr4.atn.PredictionMode import PredictionMode
from latex2sympy2_extended import latex2sympy2
from math_verify import parse
from sympy import srepr
from test_fastpath import GRID

from rl_verifier_math.quickparse import INSTALLED, faster

PAIRS = Path(__file__).parent / "data" / "parity.jsonl"


def texts() -> list[str]:
    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("hack") != "giant"]
    found = {f"${r['reference']}$" for r in rows} | {r["answer"] for r in rows}
    return sorted(found | {f"${g}$" for g in GRID} | {f"\\boxed{{{g}}}" for g in GRID})


def reading(text: str) -> list[str]:
    math_verify.parser.parse_latex_cached.cache_clear()  # each parse really runs
    return [srepr(v) if not isinstance(v, str) else v for v in parse(text, parsing_timeout=None)]


def test_two_stage_parses_are_math_verifys() -> None:
    assert INSTALLED
    differ = []
    for text in texts():
        shipped = reading(text)
        with faster():
            quick = reading(text)
        if quick != shipped:
            differ.append((text, shipped, quick))
    assert not differ, differ


def test_outside_the_block_latex2sympy_runs_as_shipped() -> None:
    converter = latex2sympy2._Latex2Sympy()
    assert converter.create_parser("(1,2)")._interp.predictionMode == PredictionMode.LL
    with faster():
        assert converter.create_parser("(1,2)")._interp.predictionMode == PredictionMode.SLL
    assert converter.create_parser("(1,2)")._interp.predictionMode == PredictionMode.LL
