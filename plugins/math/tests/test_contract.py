"""The core's contract tests on representative cases, for the default and strict settings."""

from __future__ import annotations

from typing import Any, ClassVar

from math_helpers import task

from rl_verifier import Status
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_math import MathVerifier


class TestMathContract(VerifierContract):
    verifier_class = MathVerifier
    config: ClassVar[dict[str, Any]] = {}

    def cases(self) -> list[Case]:
        half, seven = task("\\frac{1}{2}"), task("7")
        return [
            Case(half, "So $x = \\boxed{0.5}$.", Status.OK, 1.0),
            Case(half, "Answer: 1/2", Status.OK, 1.0),
            Case(half, "\\boxed{\\frac{1}{3}}", Status.OK, 0.0),
            Case(seven, [{"role": "assistant", "content": "The answer is 7."}], Status.OK, 1.0),
            Case(seven, "\\boxed{3+4}", Status.OK, 0.0),
            Case(seven, "I am not sure.", Status.INVALID, 0.0),
            Case(seven, "", Status.INVALID, 0.0),
            Case(task(), "\\boxed{7}", Status.ERROR),
        ]


class TestMathContractBoxedOnly(TestMathContract):
    config: ClassVar[dict[str, Any]] = {"extract": "boxed", "invalid_penalty": -0.5}

    def cases(self) -> list[Case]:
        seven = task("7")
        return [
            Case(seven, "\\boxed{7}", Status.OK, 1.0),
            Case(seven, "The answer is 7.", Status.INVALID, -0.5),
            Case(seven, "\\boxed{7", Status.INVALID, -0.5),
        ]
