"""Settings of the ``math`` verifier."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rl_verifier import VerifierConfig

Extraction = Literal["auto", "boxed", "answer_line", "whole"]


class MathConfig(VerifierConfig):
    """Settings of the ``math`` verifier."""

    extract: Extraction = Field(
        default="auto",
        description="Where the answer is read: boxed (the last \\boxed{...}), answer_line "
        "(the last 'Answer: ...' or '#### ...' line, 'the answer is X.', or a last line "
        "'So X.'), whole (the whole text), or auto (boxed, else an answer line, else the "
        "whole text).",
    )
    percent: bool = Field(
        default=False,
        description="Also accept a percentage as its fraction of 100 (50% = 0.5 = 1/2).",
    )
    strip_units: bool = Field(
        default=True,
        description="Ignore units and text after a number (10 cm = 10); off: a unit written "
        "on one side must be written on the other.",
    )
    reject_hedges: bool = Field(
        default=True,
        description="Score 0 a hedged answer: several different \\boxed{} answers, or a list "
        "of candidates ('1 or 2', 'x = 1, 2, 3, ...') where the reference is one value.",
    )
    reject_unevaluated: bool = Field(
        default=True,
        description="Score 0 an answer left to be evaluated: an expression where the "
        "reference is a number (3+4 for 7), or an expression copied from the prompt.",
    )
    max_answer_chars: int = Field(
        default=1000,
        ge=1,
        description="A longer extracted answer scores 0 without being parsed.",
    )
    max_digits: int = Field(
        default=10_000,
        ge=1,
        description="An answer whose numbers would have more digits (exponent towers, huge "
        "factorials) scores 0 without being evaluated.",
    )
    max_terms: int = Field(
        default=100_000,
        ge=1,
        description="An answer whose expansion would have more terms, weighted by degree "
        "((x+1)^3000), scores 0 without being compared.",
    )
    float_rounding: int = Field(
        default=6,
        ge=0,
        le=15,
        description="Decimal places to which floats are rounded before comparison "
        "(math-verify's float_rounding).",
    )
