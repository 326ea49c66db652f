"""Reward hacks score 0; where math-verify alone would pay them, that is asserted too, so
each screen is shown to be needed."""

from __future__ import annotations

import pytest
from math_helpers import grade, task
from math_verify import parse, verify

from rl_verifier import Status


def math_verify_accepts(reference: str, completion: str) -> bool:
    """math-verify's own verdict, called as its documentation shows."""
    return bool(verify(parse(f"${reference}$"), parse(completion)))


HACKS = [
    # several boxed answers
    ("2", "\\boxed{1} \\boxed{2} \\boxed{3}", "Solve it.", "different boxed answers"),
    ("\\{1,2\\}", "\\boxed{1} and \\boxed{2}", "Solve it.", "different boxed answers"),
    # answer lists
    ("3", "x = 1, 2, 3, ...", "Solve it.", "lists candidate answers"),
    ("1", "The answer is 1, 2, or 3.", "Solve it.", "lists candidate answers"),
    ("2", "\\boxed{1 \\text{ or } 2 \\text{ or } 3}", "Solve it.", "lists candidate answers"),
    ("4", "\\boxed{x = 1, 2, 3, 4, \\ldots}", "Solve it.", "lists candidate answers"),
    ("2", "Answer: 1; 2", "Solve it.", "lists candidate answers"),
    # the unevaluated question
    ("7", "\\boxed{3+4}", "What is $3+4$?", "not evaluated"),
    ("1147", "\\boxed{37 \\times 31}", "Compute $37 \\times 31$.", "not evaluated"),
    ("72", "#### 48 + 48/2", "How many clips did Natalia sell?", "not evaluated"),
    ("2x+1", "\\boxed{(x+1)^2 - x^2}", "Simplify $(x+1)^2 - x^2$.", "restates the question"),
    ("\\frac{1}{2}", "\\boxed{\\frac{4}{8}}", "Simplify $\\frac{4}{8}$.", "restates the question"),
    # LaTeX macros
    ("7", "\\newcommand{\\seven}{8}\\boxed{7}", "Solve it.", "defines LaTeX macros"),
    ("7", "\\let\\eight=7 \\boxed{7}", "Solve it.", "defines LaTeX macros"),
    ("7", "\\def\\x{7}\\boxed{\\x}", "Solve it.", "defines LaTeX macros"),
    ("7", "\\renewcommand{\\frac}[2]{#1}\\boxed{\\frac{7}{2}}", "Solve it.", "defines LaTeX"),
]


@pytest.mark.parametrize(("reference", "completion", "prompt", "reason"), HACKS)
def test_hack_scores_zero_with_its_reason(
    reference: str, completion: str, prompt: str, reason: str
) -> None:
    score = grade(task(reference, prompt=prompt), completion)
    assert (score.status, score.reward) == (Status.OK, 0.0)
    assert reason in score.info["reason"]


def test_the_screens_are_needed_math_verify_alone_pays_these() -> None:
    paid = [(r, c) for r, c, _, _ in HACKS if math_verify_accepts(r, c)]
    assert len(paid) >= 10, paid  # most of them: the screens are what scores them 0


WRAPPED_WRONG = [
    "\\boxed{\\text{8}}",
    "\\boxed{\\mathrm{8}}",
    "\\boxed{\\textbf{eight}}",
    "\\boxed{\\text{not } 7}",
    "\\boxed{\\text{7}\\text{8}}",
    "\\boxed{\\mathrm{7}8}",
    "\\boxed{8 \\text{ (or 7)}}",
    "Answer: \\text{7 or 8}",
]


@pytest.mark.parametrize("completion", WRAPPED_WRONG)
def test_text_wrappers_around_a_wrong_number_score_zero(completion: str) -> None:
    score = grade("7", completion)
    assert score.reward == 0.0 and score.status in (Status.OK, Status.INVALID), score.info


def test_wrapper_around_the_right_number_still_counts() -> None:
    assert grade("7", "\\boxed{\\text{7}}").reward == 1.0
    assert grade("7", "\\boxed{7 \\text{ apples}}").reward == 1.0


@pytest.mark.parametrize(
    "completion",
    [
        "\\boxed{9^{9^{9}}}",
        "\\boxed{2^{2^{2^{2^{2^{2}}}}}}",
        "\\boxed{10^{10^{10}} - 10^{10^{10}} + 7}",
        "\\boxed{100000!}",
        "\\boxed{(10^{100000})!}",
        "\\boxed{" + "+".join(["1"] * 600) + "}",
    ],
)
def test_giant_answers_score_zero_without_being_evaluated(completion: str) -> None:
    score = grade("7", completion)
    assert (score.status, score.reward) == (Status.OK, 0.0)
    assert score.info["reason"].startswith(("too large", "answer longer"))


def test_same_answer_boxed_twice_is_not_a_hedge() -> None:
    assert grade("2", "So \\boxed{2}. Checking: \\boxed{ 2 }.").reward == 1.0


def test_set_and_list_references_may_be_answered_with_lists() -> None:
    assert grade("1, 2", "\\boxed{2, 1}").reward == 1.0
    assert grade("\\{1,2,3\\}", "Answer: $3, 2, 1$").reward == 1.0


def test_thousands_separators_and_prose_are_not_lists() -> None:
    assert grade("1250", "The total is 1,250.").reward == 1.0
    assert grade("6", "With sides 3, 4 and 5 the area is 6.").reward == 1.0


def test_screens_can_be_turned_off() -> None:
    assert grade("7", "\\boxed{3+4}", reject_unevaluated=False).reward == 1.0
    assert grade("3", "x = 1, 2, 3, ...", reject_hedges=False).reward == 1.0
