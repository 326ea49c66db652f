"""Completions whose cost the model controls: each is the model's failure (``invalid`` with
``info.limit``, or an ordinary verdict on what it wrote), never ``timeout`` or ``error``.

No timings are asserted (speed belongs in benchmarks). The parse is linear, so only length
buys time: 10 MB of numbers ran past the 5 s deadline before ``max_completion_chars``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_calibration.verifier import MAX_COMPLETION_CHARS, CalibrationVerifier

TASK = Task(id="q", prompt="Will it rain?", reference={"outcome": 1})
TEN_MB = 10_000_000


@pytest.mark.parametrize("rule", ["log", "rlcr"])
def test_ten_megabytes_of_numbers_are_invalid_naming_the_limit(rule: str) -> None:
    """In a worker process under the default 5 s deadline: ``timeout`` before the bound."""
    texts = ["0.5 " * (TEN_MB // 4), "60 - " * (TEN_MB // 5) + "80%"]
    scores = score_once(
        CalibrationVerifier({"rule": rule}), [(TASK, t) for t in texts], "process", 1
    )
    for score in scores:
        assert score.status is Status.INVALID, score.error
        assert score.info["limit"] == "max_completion_chars"
        assert score.reward == -0.1  # invalid_penalty: a long answer never beats a forecast


def test_one_character_past_the_bound_is_invalid() -> None:
    text = "<probability>0.7</probability>".ljust(MAX_COMPLETION_CHARS + 1)
    [over] = score_once(CalibrationVerifier(), [(TASK, text)])
    [at] = score_once(CalibrationVerifier(), [(TASK, text[:MAX_COMPLETION_CHARS])])
    assert (over.status, over.info["limit"]) == (Status.INVALID, "max_completion_chars")
    assert at.status is Status.OK and at.reward == pytest.approx(0.91)


# Under the bound: huge literals and pathological shapes get an ordinary verdict.
UNDER: list[tuple[str, Status, float, dict[str, Any]]] = [
    ("<probability>" + "9" * 100_000 + "</probability>", Status.INVALID, -0.1, {}),
    ("<probability>1e" + "9" * 100_000 + "</probability>", Status.INVALID, -0.1, {}),
    ("<probability>1e-" + "9" * 100_000 + "</probability>", Status.OK, 0.0, {}),  # p = 0
    ("<probability>0." + "9" * 100_000 + "</probability>", Status.OK, 1.0, {}),
    ("<probability>" * 10_000, Status.INVALID, -0.1, {}),
    ("1" * 100_000 + ".2.3", Status.INVALID, -0.1, {}),
    ("Answer: yes\n" * 10_000 + "<probability>" * 5_000, Status.INVALID, -0.1, {"rule": "rlcr"}),
]


@pytest.mark.parametrize(("text", "status", "reward", "config"), UNDER, ids=lambda v: str(v)[:20])
def test_huge_literals_and_unclosed_tags_are_judged(
    text: str, status: Status, reward: float, config: dict[str, Any]
) -> None:
    [score] = score_once(CalibrationVerifier(config), [(TASK, text)])
    assert score.status is status, score.error
    assert score.reward == pytest.approx(reward)


# Shapes that made the regexes backtrack before they were written linear (possessive
# whitespace, tag tokens instead of lazy groups).
PATHOLOGICAL = [
    "<probability>" * 15_000,
    "<answer>" * 20_000,
    "<probability>0.5</confidence>" * 6_000,
    "Probability" + " " * 190_000 + "x",
    ("Probability" + " " * 2000 + "(x)" + " " * 2000 + "**") * 40,
    "Answer" + " " * 190_000,
    "final" + " " * 190_000,
    "0.5 " * 45_000,
    "5 - " * 45_000 + "5%",
    ("<" + " " * 4000) * 40,
    "5" * 190_000 + ".5.5",
]


@pytest.mark.parametrize("rule", ["brier", "rlcr"])
def test_pathological_text_under_the_bound_is_judged_before_the_deadline(rule: str) -> None:
    """Each shape, just under the bound, gets its verdict in a worker process under the 5 s
    deadline (a quadratic regex would make these ``timeout``)."""
    assert all(len(text) <= MAX_COMPLETION_CHARS for text in PATHOLOGICAL)
    pairs = [(TASK, text) for text in PATHOLOGICAL]
    scores = score_once(CalibrationVerifier({"rule": rule}), pairs, "process", 1)
    for text, score in zip(PATHOLOGICAL, scores, strict=True):
        assert score.status in (Status.OK, Status.INVALID), (text[:30], score.error)
