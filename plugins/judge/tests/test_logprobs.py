"""``format='logprobs'``: one score digit, read as the probability-weighted mean of the
score digits at the judge's first token; too little probability on them is ``error``."""

from __future__ import annotations

import math

import pytest
from fake_judge import FakeJudge
from judge_helpers import judge_one, rank

from rl_verifier import Status, UserError
from rl_verifier_judge import JudgePairVerifier, JudgeVerifier
from rl_verifier_judge.logprob_scores import LowMass, expected_score, first_alternatives

SCALE = (1, 5)


def digits(fake_judge: FakeJudge, model: str = "scripted", **extra: object) -> dict:
    return fake_judge.settings(model, format="logprobs", scale=SCALE, **extra)


def test_the_score_is_the_expected_digit_and_the_mass_is_recorded(fake_judge: FakeJudge) -> None:
    right = judge_one(digits(fake_judge, "scripted-digits"), "Paris")
    wrong = judge_one(digits(fake_judge, "scripted-digits"), "Lyon")
    assert (right.status, right.reward, right.info["score"]) == (Status.OK, 0.75, 4.0)
    assert (wrong.status, wrong.reward) == (Status.OK, 0.25)
    assert right.info["score_mass"] == pytest.approx(0.8)
    assert right.info["score_distribution"]["4"] == pytest.approx(0.8)  # "4" and " 4" merged
    body = next(b for b in fake_judge.bodies if b["model"] == "scripted-digits")
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] <= 3
    assert [m["role"] for m in body["messages"]][-3:] == ["user", "assistant", "user"]


def test_probabilities_weigh_the_digits(fake_judge: FakeJudge) -> None:
    score = judge_one(digits(fake_judge, "spread"), "Paris")
    assert score.info["score"] == pytest.approx((2 * 0.5 + 4 * 0.3) / 0.8)
    assert score.reward == pytest.approx((score.info["score"] - 1) / 4)


def test_too_little_mass_on_the_digits_is_an_error_never_a_score(fake_judge: FakeJudge) -> None:
    score = judge_one(digits(fake_judge, "fault:lowmass"), "Paris")
    assert (score.status, score.reward) == (Status.ERROR, 0.0)
    assert "less than min_score_mass=0.5" in (score.error or "")
    assert score.info["score_mass"] == pytest.approx(0.05)
    assert score.info["judge_text"] == "The" and score.info["unparsed"] is True


def test_an_endpoint_without_logprobs_is_an_error(fake_judge: FakeJudge) -> None:
    score = judge_one(digits(fake_judge, "fault:nologprobs"), "Paris")
    assert score.status is Status.ERROR and "sent no logprobs" in (score.error or "")


@pytest.mark.parametrize("extra", [{"model": "completions-shape"}, {"stream": True}])
def test_both_reply_shapes_and_streams_are_read(fake_judge: FakeJudge, extra: dict) -> None:
    settings = {**digits(fake_judge), **extra}
    score = judge_one(settings, "Paris")
    assert (score.status, score.reward) == (Status.OK, 0.75)


def test_a_rescore_reads_the_cached_probabilities(fake_judge: FakeJudge) -> None:
    first = judge_one(digits(fake_judge, "scripted-cached"), "Paris")
    again = judge_one(digits(fake_judge, "scripted-cached"), "Paris")
    assert again.info["judge"]["cached_calls"] == 1 and fake_judge.requests["scripted-cached"] == 1
    assert (again.reward, again.info["score_mass"]) == (first.reward, first.info["score_mass"])


def test_the_scale_must_be_single_digits() -> None:
    with pytest.raises(UserError, match="whole numbers from 0 to 9"):
        JudgeVerifier({"format": "logprobs", "scale": (0, 10)})
    with pytest.raises(UserError, match="judge_pair reads a 'Winner:' line"):
        JudgePairVerifier({"format": "logprobs", "scale": SCALE})


def test_reading_alternatives() -> None:
    chat = {"content": [{"token": "4", "logprob": -0.1, "top_logprobs": []}]}
    assert first_alternatives(chat) == [("4", -0.1)]
    assert first_alternatives({"top_logprobs": [{"3": -1.0}]}) == [("3", -1.0)]
    assert first_alternatives(None) is None and first_alternatives({"content": []}) is None
    with pytest.raises(LowMass):
        expected_score([("7", 0.0)], SCALE, 0.5)  # 7 is outside [1, 5]: no mass
    assert expected_score([("3", math.log(0.6))], SCALE, 0.5).score == 3


def test_rank_scores_each_completion_with_the_group_as_context(fake_judge: FakeJudge) -> None:
    group = ["You are kind.", "You are a truly wonderful person, my dear old friend."]
    scores = rank(digits(fake_judge, "scripted-rank"), group)
    assert [s.reward for s in scores] == [1.0, 0.5]  # shorter is better: 5 and 3
    assert fake_judge.requests["scripted-rank"] == 2  # one call per completion
    assert scores[0].info["group"]["judge"]["calls"] == 2
    both = rank(digits(fake_judge, "scripted-rank2", reverse_pass=True), group)
    assert [s.reward for s in both] == [1.0, 0.5] and both[0].info["group"]["disagreement"] == 0


def test_rank_a_failed_completion_fails_alone(fake_judge: FakeJudge) -> None:
    scores = rank(digits(fake_judge, "fault:lowmass:1"), ["You are kind.", "You are nice."])
    assert sorted(s.status.value for s in scores) == ["error", "ok"]
    failed = next(s for s in scores if s.status is Status.ERROR)
    assert failed.reward == 0.0 and failed.info["score_mass"] == pytest.approx(0.05)
