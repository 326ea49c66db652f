"""The reward examples from the specification: gold 1889, one search returning r1."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Completion, Status, Verdict
from rl_verifier_tool_calls.tasks import eiffel_task, search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


def judge(completion: Any, **config: Any) -> Verdict:
    task = eiffel_task()
    verdict = ToolCallsVerifier(config).verify(
        task, Completion(task_id=task.id, completion=completion)
    )
    assert isinstance(verdict, Verdict)
    return verdict


@pytest.mark.parametrize(
    ("completion", "reward"),
    [
        (search_episode(1, "1889 [r1]"), 1.0),
        (search_episode(3, "1889 [r1]"), 0.95),
        (search_episode(5, "1889 [r1]"), 0.0),
        ([{"role": "assistant", "content": "1889"}], 0.8),
        (search_episode(1, "1889 [r7]"), 0.3),
        (search_episode(1, "1889", arguments='{"query": "Eiffel"'), 0.7),
        (search_episode(1, "1890 [r1]"), 0.3),
    ],
    ids=["one-call", "three-calls", "five-calls", "no-call", "fabricated-r7", "bad-json", "wrong"],
)
def test_specified_rewards(completion: Any, reward: float) -> None:
    verdict = judge(completion)
    assert verdict.status is Status.OK
    assert verdict.reward == pytest.approx(reward, abs=1e-9)


def test_components_are_reported() -> None:
    verdict = judge(search_episode(3, "1889 [r1] [r7]"))
    assert verdict.components == {
        "answer": 1.0,
        "citation_validity": 0.5,
        "legality": 1.0,
        "thrift": 0.5,
        "fabricated_share": 0.5,
        "calls": 3.0,
    }
    assert verdict.info["fabricated_ids"] == ["r7"]


def test_bad_json_call_has_a_reason() -> None:
    verdict = judge(search_episode(1, "1889", arguments='{"query": "Eiffel"'))
    [bad] = verdict.info["illegal_calls"]
    assert bad["index"] == 0
    assert "malformed tool call JSON" in bad["reason"]


def test_five_calls_says_why() -> None:
    verdict = judge(search_episode(5))
    assert "too many tool calls: 5 > max_calls 4" in verdict.info["zero_reason"]


def test_weights_and_limits_are_configurable() -> None:
    weights = {"answer": 1.0, "citation": 0.0, "legality": 0.0, "thrift": 0.0, "fabricated": 1.0}
    assert judge(search_episode(1, "1889 [r7]"), weights=weights).reward == pytest.approx(0.0)
    assert judge(search_episode(5), max_calls=6).reward == pytest.approx(0.9)
    assert judge(search_episode(2), target_calls=1).reward == pytest.approx(0.9)


def test_bounds_follow_weights() -> None:
    assert ToolCallsVerifier().bounds() == pytest.approx((-0.5, 1.0))
    assert ToolCallsVerifier({"mode": "bfcl"}).bounds() == (0.0, 1.0)
