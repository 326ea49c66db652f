"""The strict readers of the judge's answers, and the JSON answer format end to end."""

from __future__ import annotations

import pytest
from fake_judge import FakeJudge
from judge_helpers import judge_one

from rl_verifier import Status
from rl_verifier_judge.parsing import (
    ParseProblem,
    parse_label_scores,
    parse_score_json,
    parse_score_line,
    parse_winner,
)
from rl_verifier_judge.prompts import label

SCALE = (0.0, 10.0)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Good.\nScore: 7", 7.0),
        ("Good.\n**Score:** 7/10", 7.0),
        ("score = 3.5.", 3.5),
        ("Score: 10\nReasoning...\nScore: 0", 0.0),
    ],
)
def test_score_line_reads_the_final_line(text: str, score: float) -> None:
    assert parse_score_line(text, SCALE) == score


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Score: 7\nThat is all.", "does not end with"),
        ("I give it a 7", "does not end with"),
        ("", "empty"),
        ("Score: 11", "outside the scale"),
        ("Score: -1", "outside the scale"),
        ("Score: 4/5", "scored out of 5"),
        ("Score: seven", "does not end with"),
    ],
)
def test_score_line_refuses_anything_else(text: str, problem: str) -> None:
    with pytest.raises(ParseProblem, match=problem):
        parse_score_line(text, SCALE)


def test_json_answers_are_one_object() -> None:
    assert parse_score_json('{"reason": "ok", "score": 6}', SCALE) == 6
    assert parse_score_json('```json\n{"score": 2}\n```', SCALE) == 2
    for bad, problem in [
        ('Here: {"score": 6}', "not one JSON object"),
        ('{"score": 6} {"score": 9}', "not one JSON object"),
        ("[6]", "not an object"),
        ('{"score": "6"}', "not a number"),
        ('{"score": true}', "not a number"),
        ('{"grade": 6}', "no 'score'"),
        ('{"score": 60}', "outside"),
    ]:
        with pytest.raises(ParseProblem, match=problem):
            parse_score_json(bad, SCALE)


def test_label_scores_need_exactly_the_labels() -> None:
    assert parse_label_scores('{"A": 1, "B": 9}', ["A", "B"], SCALE) == {"A": 1, "B": 9}
    with pytest.raises(ParseProblem, match=r"missing \['B'\], unexpected \['C'\]"):
        parse_label_scores('{"A": 1, "C": 9}', ["A", "B"], SCALE)
    assert [label(i) for i in (0, 25, 26, 27, 701, 702)] == ["A", "Z", "AA", "AB", "ZZ", "AAA"]


def test_winner_line() -> None:
    assert parse_winner("B is clearer.\nWinner: B") == "B"
    assert parse_winner("**Winner:** tie") == "tie"
    with pytest.raises(ParseProblem):
        parse_winner("Winner: A\nthough B is close")


def test_json_format_end_to_end_and_out_of_scale_is_error(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings(format="json"), "Paris")
    assert (score.status, score.reward, score.info["score"]) == (Status.OK, 0.8, 8)
    refused = judge_one(fake_judge.settings(format="json", scale=(1, 5)), "Paris")
    assert refused.status is Status.ERROR and "outside the scale [1, 5]" in (refused.error or "")
    assert '"score": 8' in refused.info["judge_text"]
