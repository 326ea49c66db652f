"""The core's own verifiers pass the plugin test kit, which tests the kit as well."""

from __future__ import annotations

from rl_verifier import Status, Task
from rl_verifier.builtin.plugin import ExactMatch, FormatGate, normalise_answer
from rl_verifier.testing import Case, VerifierContract, score_once

CAPITAL = Task(id="capital", prompt="Capital of France?", reference={"answers": ["Paris"]})


class TestExactMatchContract(VerifierContract):
    verifier_class = ExactMatch
    config = {"require_pattern": True}

    def cases(self) -> list[Case]:
        return [
            Case(CAPITAL, "<answer>The Paris.</answer>", Status.OK, 1.0),
            Case(CAPITAL, "<answer>Lyon</answer>", Status.OK, 0.0),
            Case(
                CAPITAL,
                [{"role": "assistant", "content": "<answer>paris</answer>"}],
                Status.OK,
                1.0,
            ),
            Case(CAPITAL, "Paris", Status.INVALID, 0.0),
        ]


class TestFormatContract(VerifierContract):
    verifier_class = FormatGate
    config = {"pattern": r"(?s)<answer>.+</answer>", "invalid_penalty": -1.0}
    can_be_invalid = False

    def cases(self) -> list[Case]:
        return [
            Case(CAPITAL, "<answer>x</answer>", Status.OK, 1.0),
            Case(CAPITAL, "x", Status.OK, 0.0),
        ]


def test_normalise_answer() -> None:
    assert normalise_answer("  The  Eiffel-Tower! ") == "eiffeltower"
    assert normalise_answer("An apple, a day") == "apple day"


def test_missing_reference_is_an_error_not_a_wrong_answer() -> None:
    [score] = score_once(ExactMatch(), [(Task(id="x", prompt="?"), "Paris")])
    assert score.status is Status.ERROR


def test_last_answer_counts() -> None:
    text = "<answer>Paris</answer> no wait <answer>Lyon</answer>"
    [score] = score_once(ExactMatch(), [(CAPITAL, text)])
    assert score.reward == 0.0
