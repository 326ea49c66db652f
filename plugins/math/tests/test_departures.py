"""Named departures from math-verify (listed in the README): for each, math-verify's own verdict
is asserted next to ours, so every departure is shown to be one, and to be needed."""

from __future__ import annotations

from typing import Any

import pytest
from math_helpers import grade, task
from math_verify import parse, verify

from rl_verifier import Status


def math_verify_pays(reference: str, completion: str) -> bool:
    return bool(verify(parse(f"${reference}$"), parse(completion)))


# (departure, reference, reference keys, completion, our reward); math-verify's verdict is the
# other one in every row.
DEPARTURES: list[tuple[str, str, dict[str, Any], str, float]] = [
    ("prefixed integers", "0x4d0efa34", {}, "\\boxed{0x4d0efa35}", 0.0),  # 0*x*... = 0
    ("prefixed integers", "0b101", {}, "\\boxed{0b111}", 0.0),
    ("prefixed integers", "0", {}, "\\boxed{0x5}", 0.0),
    ("digits in a named base", "1a", {"base": 16}, "\\boxed{a1}", 0.0),
    ("digits in a named base", "1a1", {"base": 16}, "\\boxed{0x1a1}", 1.0),
    ("identifiers", "1a1", {}, "\\boxed{a1}", 0.0),
    ("a letter before a digit", "-15.0 + 3.0i", {}, "\\boxed{-15.0 + 3.0i1}", 0.0),
    ("a letter before a digit", "Friday", {}, "\\boxed{Friday1}", 0.0),
    ("words", "No", {}, "\\boxed{On}", 0.0),  # N*o = o*N
    ("words", "Yes", {}, "The answer is yes.", 1.0),
    ("scientific notation", "1000", {}, "\\boxed{1e3}", 1.0),  # math-verify: 1
    ("scientific notation", "0.2", {}, "\\boxed{2e-1}", 1.0),
    ("scientific notation", "3e", {}, "\\boxed{1e3}", 0.0),  # 1*e*3 = 3e
    ("times", "06:09", {}, "\\boxed{02:03}", 0.0),  # read as the ratio 6/9 = 2/3
    ("times", "00:34:28", {}, "\\boxed{00:34:29}", 0.0),
    ("factorizations", "2 × 2 × 5 × 7 × 7", {}, "\\boxed{980}", 0.0),
]


@pytest.mark.parametrize(("departure", "reference", "keys", "completion", "reward"), DEPARTURES)
def test_departure_from_math_verify(
    departure: str, reference: str, keys: dict[str, Any], completion: str, reward: float
) -> None:
    score = grade(task(reference, **keys), completion)
    assert (score.status, score.reward) == (Status.OK, reward), (departure, score.info)
    assert math_verify_pays(reference, completion) != bool(reward), departure


@pytest.mark.parametrize(
    ("reference", "keys", "completion"),
    [
        ("0x3d2d", {}, "The answer is 0x3D2D."),
        ("0x3d2d", {}, "\\boxed{15661}"),  # the same integer in decimal
        ("-0x3", {}, "0x-3 is not it; the answer is -0x3."),
        ("1a1", {"base": 15}, "So 1A1."),
        ("1111010010", {"base": 2}, "\\boxed{0b1111010010}"),
        ("1.7574418454559584e-22", {}, "\\boxed{1.7574418454559584 \\times 10^{-22}}"),
        ("06:09", {}, "\\boxed{6:09}"),
        ("59 days, 17:53:00", {}, "The answer is 59 days, 17:53:00."),
        ("2 × 2 × 5 × 7 × 7", {}, "\\boxed{2^2 \\times 5 \\times 7^2}"),
        ("Wednesday", {}, "\\boxed{\\text{Wednesday}}"),
        ("No", {}, "Answer: **No**"),
    ],
)
def test_literal_kinds_accept_their_other_spellings(
    reference: str, keys: dict[str, Any], completion: str
) -> None:
    score = grade(task(reference, **keys), completion)
    assert (score.status, score.reward) == (Status.OK, 1.0), score.info


@pytest.mark.parametrize(
    ("reference", "keys", "completion"),
    [
        ("0x3d2d", {}, "\\boxed{3d2d}"),  # the task's answer is a 0x literal: bare digits are not
        ("1a1", {"base": 15}, "\\boxed{1a1_{16}}"),
        ("1.7574418454559584e-22", {}, "\\boxed{1.76e-22}"),  # 3 digits: not the value given
        ("1.7574418454559584e-22", {}, "\\boxed{0}"),  # math-verify rounds both to 0
        ("2 × 2 × 5 × 7 × 7", {}, "\\boxed{4 × 5 × 49}"),
        ("Friday", {}, "\\boxed{Friday or Monday}"),
        ("Yes", {}, "\\boxed{Yes1}"),
    ],
)
def test_literal_kinds_reject_near_misses(
    reference: str, keys: dict[str, Any], completion: str
) -> None:
    score = grade(task(reference, **keys), completion)
    assert score.reward == 0.0 and score.status in (Status.OK, Status.INVALID), score.info


def test_a_base_that_is_not_one_is_the_tasks_error() -> None:
    assert grade(task("12", base=1), "\\boxed{12}").status is Status.ERROR
    assert grade(task("1z", base=16), "\\boxed{12}").status is Status.ERROR


@pytest.mark.parametrize(
    ("reference", "completion", "reward"),
    [
        ("138/583", "Simplifying, the answer is 138/583.", 1.0),
        ("-15.0 + 3.0i", "-15.0 + 3.0i", 1.0),
        ("-3.625, 0.0", "So -3.625, 0.0.", 1.0),
        ("7", "So 3+4.", 0.0),  # the same screens as a boxed answer
        ("1", "The answer is 1, 2, or 3.", 0.0),
        ("7", "The answer is 5. Wait: the answer is 7.", 1.0),  # the last one stated
    ],
)
def test_plain_text_answers_are_read_like_boxed_ones(
    reference: str, completion: str, reward: float
) -> None:
    assert grade(reference, completion).reward == reward
