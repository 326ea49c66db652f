"""Where the answer is read, which reference forms are understood, what parses."""

from __future__ import annotations

import pytest
from math_helpers import grade, task
from math_verify import parse, verify

from rl_verifier import Status
from rl_verifier_math import extract, reference_answers, task_from_row
from rl_verifier_math.extract import boxed_contents


def test_boxed_contents_nest_braces_and_skip_escaped_ones() -> None:
    text = "\\boxed{\\frac{1}{2}} then \\boxed{\\{1, 2\\}} and \\boxed {x^{2}} \\boxed{open"
    assert boxed_contents(text) == ["\\frac{1}{2}", "\\{1, 2\\}", "x^{2}"]


@pytest.mark.parametrize(
    ("mode", "completion", "expected"),
    [
        ("auto", "First \\boxed{1}, finally \\boxed{2}.", ("2", "boxed")),
        ("auto", "Work.\nAnswer: 3/4\n", ("3/4", "answer_line")),
        ("auto", "Work.\n**Final answer:** $x=2$", ("$x=2$", "answer_line")),
        ("auto", "Janet sells 9 eggs.\n#### 18", ("18", "answer_line")),
        ("auto", "It is 5.", ("It is 5.", "whole")),
        ("auto", "<think>maybe \\boxed{4}</think>So 5.", ("5", "answer_line")),
        ("auto", "Adding them up, the answer is 138/583. Done.", ("138/583", "answer_line")),
        ("auto", "The answer is 5. Wait: the answer is 7.", ("7", "answer_line")),
        (
            "auto",
            "The answer is to add them.\nWe get 9.",
            ("The answer is to add them.\nWe get 9.", "whole"),
        ),
        ("auto", "So the final answer is $x=2$. I hope it is correct.", ("$x=2$", "answer_line")),
        ("boxed", "Answer: 3", None),
        ("answer_line", "\\boxed{3}", None),
        ("whole", "\\boxed{3}", ("\\boxed{3}", "whole")),
        ("auto", "   ", None),
    ],
)
def test_extraction_modes(mode: str, completion: str, expected: tuple[str, str] | None) -> None:
    found = extract(completion, mode)  # type: ignore[arg-type]
    assert (found.text, found.source) == expected if found else expected is None


@pytest.mark.parametrize(
    ("reference", "answers"),
    [
        ({"answer": "Natalia sold 48/2 = 24 clips in May.\n#### 72"}, ["72"]),
        ({"answer": "#### 1,250"}, ["1,250"]),
        ({"answer": "\\frac{14}{3}"}, ["\\frac{14}{3}"]),
        ({"answer": 42}, ["42"]),
        ({"answers": ["3", "x=3"]}, ["3", "x=3"]),
        ({"expected_answer": "\\sqrt{2}"}, ["\\sqrt{2}"]),
        ({"solution": "So $x = \\boxed{\\dfrac{1}{2}}$."}, ["\\dfrac{1}{2}"]),
    ],
)
def test_reference_forms(reference: dict[str, object], answers: list[str]) -> None:
    assert reference_answers(reference) == answers


GSM8K_ROW = {
    "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as "
    "many clips in May. How many clips did Natalia sell altogether in April and May?",
    "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
}
MATH_ROW = {
    "problem": "What is $\\frac{7}{3} + \\frac{7}{3}$?",
    "level": "Level 1",
    "type": "Prealgebra",
    "solution": "Adding, $\\frac{7}{3} + \\frac{7}{3} = \\boxed{\\frac{14}{3}}$.",
}
MATH500_ROW = {
    "problem": "Find the interval where $x^2 < 1$.",
    "solution": "The inequality holds for $-1 < x < 1$, i.e. $\\boxed{(-1, 1)}$.",
    "answer": "(-1,1)",
    "subject": "Algebra",
    "level": 2,
    "unique_id": "test/algebra/1.json",
}


@pytest.mark.parametrize(
    ("row", "right", "wrong"),
    [
        (GSM8K_ROW, "48 + 24 = 72 clips.\n#### 72", "She sold 70 clips.\n#### 70"),
        (MATH_ROW, "So the sum is $\\boxed{4\\frac{2}{3}}$.", "$\\boxed{\\frac{7}{3}}$"),
        (MATH500_ROW, "\\boxed{(-1, 1)}", "\\boxed{[-1, 1]}"),
    ],
)
def test_dataset_rows_work_as_they_are(row: dict[str, object], right: str, wrong: str) -> None:
    item = task_from_row(row, "row-0")
    assert item.prompt == row.get("question", row.get("problem"))
    assert grade(item, right).reward == 1.0
    assert grade(item, wrong).reward == 0.0
    assert task_from_row(MATH500_ROW, "x").id == "test/algebra/1.json"


@pytest.mark.parametrize(
    ("reference", "answer", "right"),
    [
        ("\\frac{1}{2}", "\\boxed{0.5}", True),
        ("0.5", "\\boxed{\\frac{1}{2}}", True),
        ("x^2+2x+1", "Answer: (x+1)^2", True),
        ("[1,3)", "\\boxed{[1, 3)}", True),
        ("[1,3)", "\\boxed{(1, 3)}", False),
        ("\\{1,2,3\\}", "\\boxed{\\{3,2,1\\}}", True),
        ("(1,2)", "\\boxed{(2,1)}", False),
        ("x=3", "\\boxed{3}", True),
        ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\sin(\\pi/3)}", True),
    ],
)
def test_equivalent_forms(reference: str, answer: str, right: bool) -> None:
    score = grade(reference, answer)
    assert (score.status, score.reward) == (Status.OK, 1.0 if right else 0.0), score.info


def test_percentages_only_when_configured() -> None:
    assert verify(parse("$0.5$"), parse("Answer: 50%"))  # math-verify: plain-text 50% is 0.5
    assert not verify(parse("$0.5$"), parse("Answer: $50\\%$"))  # but LaTeX 50\% is 50
    assert grade("0.5", "Answer: 50%").reward == 0.0  # here a percent sign is a unit
    assert grade("50", "Answer: 50%").reward == 1.0
    assert grade("0.5", "Answer: 50%", percent=True).reward == 1.0
    assert grade("50\\%", "\\boxed{\\frac{1}{2}}", percent=True).reward == 1.0
    assert grade("50\\%", "\\boxed{\\frac{1}{2}}").reward == 0.0


def test_units_stripped_unless_configured() -> None:
    assert grade("10", "\\boxed{10\\text{ cm}}").reward == 1.0
    assert grade("10", "\\boxed{10\\text{ cm}}", strip_units=False).reward == 0.0
    assert grade("10\\text{ cm}", "\\boxed{10\\text{ cm}}", strip_units=False).reward == 1.0


def test_nothing_to_parse_is_invalid_and_a_bad_reference_an_error() -> None:
    assert grade("7", "I have no idea what the answer is.").status is Status.INVALID
    assert grade("7", "\\boxed{}").status is Status.INVALID
    broken = grade(task(solution="no boxed answer here"), "\\boxed{7}")
    assert broken.status is Status.ERROR and "no answer" in (broken.error or "")


def test_info_says_what_was_read() -> None:
    score = grade("72", "Adding up...\n#### 72")
    assert score.info == {"answer": "72", "source": "answer_line", "parsed": "72"}
