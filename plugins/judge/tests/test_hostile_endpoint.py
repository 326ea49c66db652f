"""A judge endpoint that answers without end, or asks for waits it should not, costs a
verdict at most its caps: an over-long reply is ``error`` with the cap in the reason,
read no further (the server sees the client hang up), and every wait between attempts
counts against ``deadline_s``. Each case is a real loopback server misbehaving."""

from __future__ import annotations

import pytest
from fake_judge import FakeJudge
from judge_helpers import judge_one

from rl_verifier import Status
from rl_verifier_judge.client import retry_after

CAP = 64 << 10
# Far more than any cap here plus the kernel's socket buffers, far less than the 1 GiB sent.
READ_AT_MOST = 64 << 20
# The verdict's own deadline: where the judge's deadline is not kept, the row says this.
VERDICT_TIMEOUT = {"timeout_s": 20}


@pytest.mark.parametrize(
    ("fault", "caps", "part"),
    [
        ("huge", {"max_reply_bytes": CAP}, "body longer than max_reply_bytes=65536"),
        ("endless", {"max_reply_bytes": CAP}, "body longer than max_reply_bytes=65536"),
        ("endless-sse", {"max_reply_bytes": CAP}, "stream longer than max_reply_bytes=65536"),
        ("longline", {"max_event_bytes": CAP}, "stream line longer than max_event_bytes=65536"),
    ],
)
def test_a_reply_without_end_is_an_error_read_no_further(
    fake_judge: FakeJudge, fault: str, caps: dict[str, int], part: str
) -> None:
    model = f"fault:{fault}"
    stream = "sse" in fault or fault == "longline"
    score = judge_one(fake_judge.settings(model, stream=stream, **caps, **VERDICT_TIMEOUT), "Paris")
    assert score.status is Status.ERROR, score
    assert part in (score.error or ""), score.error
    assert fake_judge.requests[model] == 1  # not retried
    assert fake_judge.sent(model) < READ_AT_MOST


def test_the_default_caps_bound_a_reply(fake_judge: FakeJudge) -> None:
    score = judge_one(fake_judge.settings("fault:endless", **VERDICT_TIMEOUT), "Paris")
    assert score.status is Status.ERROR
    assert "max_reply_bytes=4194304" in (score.error or "")
    assert fake_judge.sent("fault:endless") < READ_AT_MOST


def test_headers_without_end_are_not_read_without_end(fake_judge: FakeJudge) -> None:
    settings = fake_judge.settings("fault:headers", retries=0, **VERDICT_TIMEOUT)
    score = judge_one(settings, "Paris")
    assert score.status is Status.ERROR, score
    assert "judge connection failed: RemoteProtocolError" in (score.error or "")
    assert fake_judge.sent("fault:headers") < READ_AT_MOST


def test_a_compressed_reply_is_refused_not_inflated(fake_judge: FakeJudge) -> None:
    """Asked for ``identity``, the endpoint sends 64 MiB as a gzip body of about 64 KiB."""
    score = judge_one(fake_judge.settings("fault:gzip"), "Paris")
    assert score.status is Status.ERROR, score
    assert "Content-Encoding 'gzip'" in (score.error or "")
    assert fake_judge.encodings[-1] == "identity"


@pytest.mark.parametrize("value", ["nan", "-nan", "inf", "-5", "1_0", "soon"])
def test_a_bad_retry_after_is_ignored(fake_judge: FakeJudge, value: str) -> None:
    model = f"fault:429={value}:1"
    score = judge_one(fake_judge.settings(model, deadline_s=5, **VERDICT_TIMEOUT), "Paris")
    assert (score.status, score.reward) == (Status.OK, 0.8), score.error
    assert score.info["judge"]["attempts"] == 2


def test_a_retry_after_past_the_deadline_fails_at_once(fake_judge: FakeJudge) -> None:
    """59 s is within ``max_retry_after_s`` (60) but not within ``deadline_s``."""
    model = "fault:429=59"
    score = judge_one(fake_judge.settings(model, deadline_s=2, **VERDICT_TIMEOUT), "Paris")
    assert score.status is Status.TIMEOUT, score
    assert "59s wait before attempt 2 would pass deadline_s=2s" in (score.error or "")
    assert fake_judge.requests[model] == 1


def test_back_offs_count_against_the_deadline(fake_judge: FakeJudge) -> None:
    """Ten retries with doubling back-offs from 0.5 s would wait 4 to 8 minutes."""
    model = "fault:500"
    settings = fake_judge.settings(
        model, retries=10, backoff_s=0.5, deadline_s=2, **VERDICT_TIMEOUT
    )
    score = judge_one(settings, "Paris")
    assert score.status is Status.TIMEOUT, score
    assert "would pass deadline_s=2s" in (score.error or "")
    assert fake_judge.requests[model] < 5


def test_retry_after_reads_seconds_and_dates_only() -> None:
    assert retry_after("3") == 3.0 and retry_after(" 0.25 ") == 0.25
    assert retry_after("Mon, 01 Jan 2001 00:00:00 GMT") == 0.0  # in the past: now
    later = retry_after("Fri, 31 Dec 9999 23:59:59 GMT")
    assert later is not None and later > 1e10
    for bad in ("nan", "-nan", "inf", "-5", "+5", "1e3", "1_0", "", None, "soon"):
        assert retry_after(bad) is None, bad
