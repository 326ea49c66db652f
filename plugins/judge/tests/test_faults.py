"""Every way a judge call can fail comes back as ``error`` or ``timeout`` with a reason,
never as a reward; retries honour ``Retry-After``."""

from __future__ import annotations

import time

import pytest
from fake_judge import FakeJudge
from judge_helpers import judge_one, rank

from rl_verifier import Status


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("fault:500", "HTTP 500 (after 2 attempts)"),
        ("fault:401", "HTTP 401"),
        ("fault:badjson", "not JSON"),
        ("fault:nochoices", "no choices[0].message"),
        ("fault:refusal", "the judge refused"),
        ("fault:filter", "filtered"),
        ("fault:prose", "does not end with a 'Score: N' line"),
        ("fault:outofscale", "score 11 is outside the scale [0, 10]"),
    ],
)
def test_fault_is_an_error_with_its_reason(fake_judge: FakeJudge, fault: str, reason: str) -> None:
    score = judge_one(fake_judge.settings(fault, retries=1), "Paris")
    assert score.status is Status.ERROR, score
    assert score.reward == 0.0 and reason in (score.error or "")


def test_refusal_and_unparsed_replies_keep_the_judge_text(fake_judge: FakeJudge) -> None:
    refused = judge_one(fake_judge.settings("fault:refusal"), "Paris")
    assert "can't help" in refused.info["judge_text"]
    prose = judge_one(fake_judge.settings("fault:prose"), "Paris")
    assert prose.info["judge_text"] == "I think it is pretty good!"
    assert prose.info["unparsed"] is True and prose.info["judge"]["calls"] == 1


def test_slow_judge_past_its_deadline_is_a_timeout(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings("fault:slow", deadline_s=0.3), "Paris")
    assert score.status is Status.TIMEOUT
    assert "deadline_s=0.3" in (score.error or "")


def test_truncated_stream_is_an_error(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings("fault:truncated", stream=True), "Paris")
    assert score.status is Status.ERROR
    assert "stream ended before it finished" in (score.error or "")
    assert score.info["judge_text"] == "Sco"


def test_streamed_reply_is_read_whole(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings(stream=True), "Paris")
    assert (score.status, score.reward) == (Status.OK, 0.8)
    assert score.info["judge"]["prompt_tokens"] == 100


@pytest.mark.parametrize("code", ["429", "503"])
def test_retry_after_is_honoured_then_the_call_succeeds(fake_judge: FakeJudge, code: str) -> None:
    model = f"fault:{code}:2"
    score = judge_one(fake_judge.settings(model, retries=3), "Paris")
    assert (score.status, score.reward) == (Status.OK, 0.8), score.error
    assert score.info["judge"]["attempts"] == 3
    # On the server's clock: each retry was read only after the wait its answer asked for
    # had passed since that answer (a bound load cannot break: it only makes gaps longer).
    waits, retried = fake_judge.waits[model], fake_judge.times[model][1:]
    assert len(waits) == len(retried) == 2
    early = time.get_clock_info("monotonic").resolution  # asyncio may wake this much early
    for (answered, after), read in zip(waits, retried, strict=True):
        assert read - answered >= float(after) - early, (read - answered, after)


def test_retry_after_longer_than_allowed_fails_at_once(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings("fault:429:5", max_retry_after_s=0.1), "Paris")
    assert score.status is Status.ERROR and "exceeds max_retry_after_s" in (score.error or "")
    assert fake_judge.requests["fault:429:5"] == 1


def test_a_group_whose_call_fails_is_all_error(fake_judge: FakeJudge) -> None:
    scores = rank(fake_judge.settings("fault:500", retries=0), ["kind words", "you rock"])
    assert [s.status for s in scores] == [Status.ERROR, Status.ERROR]
    assert all("HTTP 500" in (s.error or "") for s in scores)


def test_unreachable_endpoint_is_an_error() -> None:
    settings = {"base_url": "http://127.0.0.1:9/v1", "retries": 1, "backoff_s": 0.01}
    score = judge_one(settings, "Paris")
    assert score.status is Status.ERROR and "unreachable" in (score.error or "")
