"""The core's contract kit, per-sample and group, against the scripted judge."""

from __future__ import annotations

from typing import Any, ClassVar

from fake_judge import FakeJudge
from judge_helpers import CAPITAL, OPEN

from rl_verifier import Status, Task
from rl_verifier.testing import Case, GroupCase, GroupVerifierContract, VerifierContract
from rl_verifier_judge import JudgePairVerifier, JudgeRankVerifier, JudgeVerifier

SERVER = FakeJudge().__enter__()  # for the life of the test process: the kit reads settings
SETTINGS = SERVER.settings(cache="off")
NO_REFERENCE = Task(id="bare", prompt="What is the capital of Spain?")
OK = Status.OK


class TestJudgeContract(VerifierContract):
    verifier_class = JudgeVerifier
    config: ClassVar[dict[str, Any]] = SETTINGS

    def cases(self) -> list[Case]:
        return [
            Case(CAPITAL, "Paris", OK, 0.8),
            Case(CAPITAL, "It is Lyon.", OK, 0.2),
            Case(CAPITAL, [{"role": "assistant", "content": "paris"}], OK, 0.8),
            Case(CAPITAL, "  \n", Status.INVALID, 0.0),
            Case(NO_REFERENCE, "Madrid", Status.ERROR),
        ]


class TestJudgeRankContract(GroupVerifierContract):
    verifier_class = JudgeRankVerifier
    config: ClassVar[dict[str, Any]] = SETTINGS

    def group_cases(self) -> list[GroupCase]:
        group = ["Be well!", "You are kind and I hope your day goes well.", "Hi"]
        return [
            GroupCase(OPEN, group, [OK] * 3, [1.0, 0.6, 1.0]),
            GroupCase(CAPITAL, ["Paris", "Lyon"], [OK, OK], [0.8, 0.2]),
        ]


class TestJudgePairContract(GroupVerifierContract):
    verifier_class = JudgePairVerifier
    config: ClassVar[dict[str, Any]] = SETTINGS

    def group_cases(self) -> list[GroupCase]:
        return [
            GroupCase(CAPITAL, ["Paris", "Lyon", "Paris is it"], [OK] * 3, [0.5, 0.0, 0.5]),
            GroupCase(OPEN, ["hi"], [Status.ERROR]),
        ]
