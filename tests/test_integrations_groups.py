"""Group verifiers through the trainer adapters: each scores the completions of one
prompt together (TRL's reward function, verl's batch function; tinker-cookbook's
``compute_group_rewards`` is in test_integrations_tinker_cookbook.py), and verl's
one-sample function refuses with a clear error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from rlv_group_verifiers import ShortestFirst

from rl_verifier import Scorer, UserError, Verifier
from rl_verifier.integrations import trl, verl

Register = Callable[[type[Verifier]], type[Verifier]]


def test_trl_reward_function_ranks_each_prompts_completions(register_verifier: Register) -> None:
    register_verifier(ShortestFirst)
    with Scorer("shortest_first", executor="inline") as scorer:
        reward = trl.reward_func(None, scorer=scorer)
        prompts = ["Say hi.", "Say yo.", "Say hi.", "Say yo."]
        rewards = asyncio.run(reward(prompts, ["hello", "yo", "hi", "yo yo"]))
    assert rewards == [0.0, 1.0, 1.0, 0.0]


def test_verl_batch_groups_by_prompt_and_single_calls_refuse(register_verifier: Register) -> None:
    register_verifier(ShortestFirst)
    infos = [{"index": 0}, {"index": 1}, {"index": 0}, {"index": 1}]
    out = verl.compute_score_batch(
        ["s"] * 4, ["hello", "yo", "hi", "yo yo"], [None] * 4, infos,
        spec="shortest_first", executor="inline",
    )  # fmt: skip
    assert [r["score"] for r in out] == [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(UserError, match="judges a group"):
        verl.compute_score("s", "hi", None, {"index": 0}, spec="shortest_first")
    verl.close_scorers()
