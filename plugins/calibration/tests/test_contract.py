"""The core's contract tests, run on representative cases for the default and rlcr rules."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_calibration.verifier import CalibrationVerifier


def task(name: str, **reference: Any) -> Task:
    return Task(
        id=name,
        prompt="Will the event happen by the end of the year? Give a probability.",
        verifier="calibration",
        reference=reference,
    )


class TestCalibrationContract(VerifierContract):
    verifier_class = CalibrationVerifier
    config: ClassVar[dict[str, Any]] = {}

    def cases(self) -> list[Case]:
        yes, no = task("yes", outcome=1), task("no", outcome=0)
        fb = task("forecastbench", resolved_to=1.0, resolved=True)
        return [
            Case(yes, "<probability>0.8</probability>", Status.OK, 0.96),
            Case(no, "Probability: 30%", Status.OK, 0.91),
            Case(yes, "I'd say 72% (0.72).", Status.OK, 1 - 0.28**2),
            Case(fb, "Confidence: 1", Status.OK, 1.0),
            Case(no, [{"role": "assistant", "content": "Forecast: 0.1"}], Status.OK, 0.99),
            Case(yes, "0.3 or 0.7", Status.INVALID, -0.1),
            Case(yes, "between 60% and 80%", Status.INVALID, -0.1),
            Case(no, "Definitely 150%", Status.INVALID, -0.1),
            Case(no, "It will probably not happen before 2026.", Status.INVALID, -0.1),
            Case(task("unresolved", outcome=None), "0.5", Status.ERROR),
            Case(task("no-outcome"), "0.5", Status.ERROR),
        ]


class TestCalibrationContractLog(TestCalibrationContract):
    config: ClassVar[dict[str, Any]] = {"rule": "log", "invalid_penalty": -10.0}

    def cases(self) -> list[Case]:
        yes = task("yes", outcome=1)
        return [
            Case(yes, "<probability>0.5</probability>", Status.OK, 0.0),
            Case(yes, "<probability>0</probability>", Status.OK, 1 + math.log2(0.01)),
            Case(yes, "<probability>0.3 0.7</probability>", Status.INVALID, -10.0),
        ]


class TestCalibrationContractRlcr(TestCalibrationContract):
    config: ClassVar[dict[str, Any]] = {"rule": "rlcr"}

    def cases(self) -> list[Case]:
        yes, no = task("yes", outcome=1), task("no", outcome=0)
        return [
            Case(yes, "<answer>yes</answer><confidence>0.8</confidence>", Status.OK, 0.96),
            Case(no, "<answer>yes</answer><confidence>0.8</confidence>", Status.OK, -0.64),
            Case(no, "Answer: no\nConfidence: 100%", Status.OK, 1.0),
            Case(yes, "<confidence>0.8</confidence>", Status.INVALID, -0.1),
            Case(yes, "<answer>yes</answer> I am 60% or 90% sure", Status.INVALID, -0.1),
            Case(task("no-outcome"), "<answer>yes</answer> 0.9", Status.ERROR),
        ]
