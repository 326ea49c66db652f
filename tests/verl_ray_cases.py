"""verl's ``RewardLoopManager`` with two Ray reward-loop workers scoring with our reward
manager; verl's naive manager around our functions runs in its ``RewardLoopWorker`` in
test_integrations_verl_reward_loop.py (each manager here costs two actor start-ups).
Run by that file in a loopback-only network namespace, with the ``behaviour`` test
verifier installed as a plugin (so the Ray actors find it too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import ray
from omegaconf import DictConfig, open_dict
from rlv_verl import Sample, batch, final_rewards, ppo_config
from transformers import AutoTokenizer
from verl.experimental.reward_loop import RewardLoopManager

from rl_verifier.execution.ray_executor import init_ray, shutdown_ray
from rl_verifier_server.models.tiny_model import ensure_tiny_model

ROUTES = {"trivia": "exact_match", "slow": "behaviour"}
KWARGS = {"routes": ROUTES, "settings": {"behaviour": {"timeout_s": 1.0}}, "workers": 1}
SAMPLES: list[Sample] = [
    ("trivia", "<answer>Paris</answer>", "Paris", {"index": 0}),
    ("slow", "spin", "x", {"index": 1}),
    ("trivia", "<answer>Lyon</answer>", "Paris", {"index": 0}),
    ("slow", "ok 0.75", "x", {"index": 1}),
]


@pytest.fixture(scope="module", autouse=True)
def ray_instance() -> Iterator[None]:
    owned = init_ray(num_cpus=2)
    try:
        yield
    finally:
        if owned:
            shutdown_ray()


def config() -> DictConfig:
    """verl's config with our reward manager and two reward-loop workers."""
    config = ppo_config()
    config.actor_rollout_ref.model.path = str(ensure_tiny_model())
    config.reward.num_workers = 2
    manager = config.reward.reward_manager
    manager.source = "importlib"
    manager.name = "VerifierRewardManager"
    manager.module.path = "pkg://rl_verifier.integrations.verl_reward_loop"
    with open_dict(config.reward):
        config.reward.reward_kwargs = KWARGS
    return config


def test_two_reward_loop_workers() -> None:
    manager = RewardLoopManager(config())
    try:
        assert len(manager.reward_loop_workers) == 2
        tokenizer: Any = AutoTokenizer.from_pretrained(ensure_tiny_model(), local_files_only=True)
        data = batch(tokenizer, SAMPLES)
        out = manager.compute_rm_score(data)  # half the batch to each worker
        assert final_rewards(data, out.batch["rm_scores"]) == pytest.approx([1.0, 0.0, 0.0, 0.75])
        assert list(out.non_tensor_batch["rlv_status"]) == ["ok", "timeout", "ok", "ok"]
        assert list(out.non_tensor_batch["rlv_judged"]) == [1.0, 0.0, 1.0, 1.0]
    finally:
        for worker in manager.reward_loop_workers:
            ray.kill(worker)
