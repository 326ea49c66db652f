"""rlv reward-server's /get_reward through OpenRLHF's own remote reward client.

OpenRLHF (0.11, installed with --no-deps from core/requirements-openrlhf.txt) posts
``{"query", "prompts", "labels"}`` from ``SingleTurnAgentExecutor._fetch_rewards_via_http``
and reads ``rewards``, ``scores`` and ``extra_logs`` back; that function runs here as is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from openrlhf.utils import agent

from rl_verifier.reward_server import ServerOptions
from rl_verifier.reward_server.serve import BoundServer, serving_in_thread

TEMPLATE = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"


def fetch(url: str, queries: list[str], prompts: list[str], labels: list[Any]) -> dict[str, Any]:
    """OpenRLHF's HTTP reward call, as its rollout makes it."""
    executor = agent.SingleTurnAgentExecutor(url)
    answers = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, labels))
    assert len(answers) == 1  # one reward server: one request
    result: dict[str, Any] = answers[0]
    return result


@pytest.fixture(scope="module")
def bound() -> Iterator[BoundServer]:
    options = ServerOptions(
        spec="exact_match", port=0, executor="inline", token="openrlhf-test-token"
    )
    with serving_in_thread(options) as running:
        yield running


def test_openrlhf_client_gets_a_reward_per_query(bound: BoundServer) -> None:
    prompts = [TEMPLATE.format(q) for q in ("2+2?", "Capital of France?", "3*3?", "1+1?")]
    responses = [
        "<answer>4</answer><|im_end|>",
        "The capital is <answer>paris</answer><|im_end|>",
        "<answer>6</answer><|im_end|>",
        "<answer>2</answer><|im_end|>",
    ]
    labels = [
        "4",  # a string label: reference.answer
        json.dumps({"answers": ["Paris", "Paris, France"]}),  # JSON text: the whole reference
        "9",
        {"answer": "2"},  # an object label: the whole reference
    ]
    queries = [p + r for p, r in zip(prompts, responses, strict=True)]
    url = f"{bound.url}/get_reward?token=openrlhf-test-token"
    answer = fetch(url, queries, prompts, labels)
    assert answer["rewards"] == [1.0, 1.0, 0.0, 1.0]
    assert answer["scores"] == answer["rewards"]
    assert answer["extra_logs"]["rlv_judged"] == [1.0] * 4
    rows = answer["rlv_scores"]
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert rows[1]["info"]["answer"] == "paris"
    assert {r["verifier"]["name"] for r in rows} == {"exact_match"}


def test_a_query_without_its_prompt_is_an_error_not_a_wrong_answer(bound: BoundServer) -> None:
    url = f"{bound.url}/get_reward?token=openrlhf-test-token"
    answer = fetch(url, ["something else <answer>4</answer>"], [TEMPLATE.format("2+2?")], ["4"])
    assert answer["rewards"] == [0.0]  # --failed-reward, as the protocol needs a number
    assert answer["extra_logs"]["rlv_judged"] == [0.0]
    assert answer["extra_logs"]["rlv_error"] == [1.0]
    assert "does not contain prompts[0]" in answer["rlv_scores"][0]["error"]
