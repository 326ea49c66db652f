"""Judge calls are cached by content on disk: a repeated completion, a second process and
a re-score cost no call; the cache can be turned off; the API key is never recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_judge import FakeJudge
from judge_helpers import CAPITAL, judge_one

from rl_verifier import Scorer, Status
from rl_verifier_judge import JudgeClient, JudgeSettings, JudgeVerifier
from rl_verifier_judge.calls_cache import CallCache
from rl_verifier_judge.outbound import outbound
from rl_verifier_judge.prompts import pointwise_messages, shown


def test_a_repeat_is_served_from_the_cache(fake_judge: FakeJudge) -> None:
    settings = fake_judge.settings("scripted-repeat")
    first = judge_one(settings, "Paris")
    again = judge_one(settings, "Paris")
    assert fake_judge.requests["scripted-repeat"] == 1
    assert first.info["judge"]["calls"] == 1 and again.info["judge"]["cached_calls"] == 1
    assert (again.status, again.reward) == (first.status, first.reward)
    judge_one(settings, "Lyon")
    assert fake_judge.requests["scripted-repeat"] == 2


def test_worker_processes_share_the_disk_cache(fake_judge: FakeJudge, judge_cache: Path) -> None:
    settings = fake_judge.settings("scripted-procs")
    pairs = [(CAPITAL, "Paris"), (CAPITAL, "Lyon"), (CAPITAL, "Paris"), (CAPITAL, "Rome")]
    with Scorer("judge", settings, executor="inline") as scorer:
        first = scorer.score_many(pairs[:2])
    with Scorer("judge", settings, executor="process", workers=1) as scorer:
        second = scorer.score_many(pairs)
    assert [s.reward for s in first] == [0.8, 0.2]
    assert [s.reward for s in second] == [0.8, 0.2, 0.8, 0.2]
    assert fake_judge.requests["scripted-procs"] == 3  # Paris, Lyon, then only Rome
    assert [s.info["judge"]["cached_calls"] for s in second] == [1, 1, 1, 0]
    assert judge_cache.exists()


def test_identical_calls_in_flight_are_made_once(fake_judge: FakeJudge) -> None:
    settings = fake_judge.settings("scripted-flight", cache="memory")
    with Scorer("judge", settings, executor="inline") as scorer:
        scores = scorer.score_many([(CAPITAL, "Paris")] * 8)
    assert fake_judge.requests["scripted-flight"] == 1
    assert sum(s.info["judge"]["calls"] for s in scores) == 1


def test_another_endpoint_is_another_call(fake_judge: FakeJudge) -> None:
    """Same model name, messages and sampling at two endpoints: B is asked, not A's reply."""
    settings = fake_judge.settings("scripted-where")
    judge_one(settings, "Paris")
    with FakeJudge() as other:
        score = judge_one({**settings, "base_url": other.url}, "Paris")
        assert other.requests["scripted-where"] == 1
    assert score.info["judge"] == {**score.info["judge"], "calls": 1, "cached_calls": 0}


def test_the_key_is_what_the_endpoint_receives(fake_judge: FakeJudge) -> None:
    """The body the server gets is the body keyed; every setting sent moves the key."""
    settings = JudgeSettings(**fake_judge.settings("scripted-sent", stream=True, cache="off"))
    messages = pointwise_messages(CAPITAL, shown("Paris", 6000), "correctness", (0, 10), "json")
    call = outbound(settings, messages)
    client = JudgeClient(settings)

    async def ask() -> None:
        try:
            await client.chat(messages)
        finally:
            await client.close()

    asyncio.run(ask())
    assert fake_judge.bodies[-1] == call.body
    assert fake_judge.url.removesuffix("/v1") + fake_judge.paths[-1] == call.url
    logprobs = settings.model_copy(update={"format": "logprobs"})
    keys = {outbound(logprobs, messages).key, call.key}
    changes = [{"base_url": "http://127.0.0.1:1/v1"}, {"model": "m2"}, {"temperature": 0.5},
               {"max_tokens": 9}, {"seed": 1}, {"seed": None}, {"stream": False}]  # fmt: skip
    for change in changes:
        keys.add(outbound(settings.model_copy(update=change), messages).key)
    keys.add(outbound(logprobs.model_copy(update={"top_logprobs": 5}), messages).key)
    assert len(keys) == len(changes) + 3
    assert outbound(settings, [{"role": "user", "content": "other"}]).key != call.key


def test_cache_off_calls_every_time(fake_judge: FakeJudge) -> None:
    settings = fake_judge.settings("scripted-off", cache="off")
    judge_one(settings, "Paris")
    judge_one(settings, "Paris")
    assert fake_judge.requests["scripted-off"] == 2


def test_failed_calls_are_not_cached(fake_judge: FakeJudge) -> None:
    settings = fake_judge.settings("fault:500:1", retries=0)
    assert judge_one(settings, "Paris").status is Status.ERROR
    assert judge_one(settings, "Paris").status is Status.OK
    assert fake_judge.requests["fault:500:1"] == 2


def test_the_disk_cache_is_bounded(tmp_path: Path) -> None:
    cache = CallCache(str(tmp_path / "small.sqlite"), entries=10)
    for n in range(1000):
        cache.put(f"judge:{n}", "m", {"text": str(n)}, 0.0)
    assert cache.store is not None and cache.store.disk is not None
    assert cache.store.disk.stats()["entries"] == 10
    cache.close()


def test_the_api_key_stays_out_of_settings_hash_and_rows(
    fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-secret-123")
    settings = fake_judge.settings("scripted-key", api_key_env="MY_JUDGE_KEY")
    score = judge_one(settings, "Paris")
    assert fake_judge.keys[-1] == "Bearer sk-secret-123"
    verifier = JudgeVerifier(settings)
    recorded = json.dumps([score.model_dump(mode="json"), verifier.config.model_dump(mode="json")])
    assert "sk-secret" not in recorded
    other = JudgeVerifier({**settings, "api_key_env": "OTHER", "cache": "off", "deadline_s": 5})
    assert other.config_hash == verifier.config_hash
    assert JudgeVerifier({**settings, "model": "m2"}).config_hash != verifier.config_hash
