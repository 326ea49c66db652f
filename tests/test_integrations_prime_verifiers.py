"""PrimeIntellect verifiers: our Rubric inside the real ``verifiers`` package.

A ``vf.SingleTurnEnv`` over a question/answer dataset (the shape of its gsm8k-style
environments) runs whole groups through its own rollout and scoring code. The model is
the one stand-in: a ``vf.Client`` that answers from a script, since no model server
exists here.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
import verifiers as vf
from datasets import Dataset
from rlv_test_verifiers import Behaviour
from verifiers.types import Response, ResponseMessage

from rl_verifier import Verifier
from rl_verifier.integrations.prime_verifiers import rubric

Register = Callable[[type[Verifier]], type[Verifier]]


class ScriptedClient(vf.Client):  # type: ignore[misc]
    """A model that answers with the next line of its script."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(object())
        self.answers = itertools.cycle(answers)

    def setup_client(self, config: Any) -> Any:
        return object()

    async def to_native_tool(self, tool: Any) -> Any:
        return tool

    async def to_native_prompt(self, messages: Any) -> tuple[Any, dict[str, Any]]:
        return messages, {}

    async def get_native_response(
        self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
    ) -> str:
        return next(self.answers)

    async def raise_from_native_response(self, response: Any) -> None:
        return None

    async def from_native_response(self, response: str) -> Response:
        message = ResponseMessage(content=response, finish_reason="stop", is_truncated=False)
        return Response(id="r", created=int(time.time()), model="scripted", message=message)

    async def close(self) -> None:
        return None


def gsm8k_style(rows: list[tuple[str, Any]]) -> Dataset:
    return Dataset.from_list([{"question": q, "answer": a} for q, a in rows])


def run_group(env: Any, answers: list[str], size: int) -> list[Any]:
    """One group through the environment's own rollout and scoring."""
    inputs = [env.get_dataset()[0]] * size
    client = ScriptedClient(answers)
    return asyncio.run(env.run_group(inputs, client, "scripted", {}, state_columns=["trajectory"]))


@pytest.fixture(autouse=True)
def behaviour(register_verifier: Register) -> None:
    register_verifier(Behaviour)


def test_single_turn_env_scores_groups_with_our_rubric() -> None:
    env = vf.SingleTurnEnv(
        dataset=gsm8k_style([("What is 2 + 3? Answer in <answer></answer>.", "5")]),
        system_prompt="Think, then answer.",
        rubric=rubric("0.8*exact_match + 0.2*format", executor="inline"),
    )
    outputs = run_group(env, ["<answer>5</answer>", "<answer>6</answer>", "five"], 3)
    assert [o["reward"] for o in outputs] == pytest.approx([1.0, 0.2, 0.0])
    assert [o["metrics"]["rlv_exact_match_format_exact_match"] for o in outputs] == [1.0, 0.0, 0.0]
    assert [o["metrics"]["rlv_judged"] for o in outputs] == [1.0, 1.0, 1.0]
    assert all(o.get("error") is None for o in outputs)


def test_reference_from_info_and_per_task_verifier() -> None:
    dataset = Dataset.from_list(
        [
            {
                "question": "Rain?",
                "answer": "",
                "info": {"verifier": "calibration", "reference": {"outcome": 1}},
            }
        ]
    )
    env = vf.SingleTurnEnv(dataset=dataset, rubric=rubric(None, executor="inline"))
    outputs = run_group(env, ["<probability>0.75</probability>"], 2)
    assert [o["reward"] for o in outputs] == pytest.approx([1 - 0.25**2] * 2)


def test_a_timeout_is_flagged_as_an_infrastructure_error_not_a_wrong_answer() -> None:
    env = vf.SingleTurnEnv(
        dataset=gsm8k_style([("Do as told.", "")]),
        rubric=rubric("behaviour", timeout_s=1.0, workers=2),
    )
    outputs = run_group(env, ["ok 1.0", "spin", "ok 0.0", "ok 0.5"], 4)
    assert [o["reward"] for o in outputs] == pytest.approx([1.0, 0.0, 0.0, 0.5])
    assert [o["metrics"]["rlv_judged"] for o in outputs] == [1.0, 0.0, 1.0, 1.0]
    assert outputs[1]["error"] is not None and "timeout" in str(outputs[1]["error"])
    assert outputs[0].get("error") is None


def test_group_mode_gives_a_timeout_zero_advantage() -> None:
    env = vf.SingleTurnEnv(
        dataset=gsm8k_style([("Do as told.", "")]),
        rubric=rubric("behaviour", group=True, timeout_s=1.0, workers=2),
    )
    outputs = run_group(env, ["ok 1.0", "spin", "ok 0.0", "ok 0.5"], 4)
    assert [o["reward"] for o in outputs] == pytest.approx([1.0, 0.5, 0.0, 0.5])
    # the advantage each trajectory step trains with
    advantages = [o["trajectory"][-1]["advantage"] for o in outputs]
    assert advantages == pytest.approx([0.5, 0.0, -0.5, 0.0])
