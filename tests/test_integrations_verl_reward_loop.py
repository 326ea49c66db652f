"""verl's Reward Loop (``verl/experimental/reward_loop``, verl 0.9.1) scoring with our
reward function (sync and async, through its ``NaiveRewardManager``) and with our own
reward manager (``VerifierRewardManager``, loaded by ``importlib`` from the config).

In process: verl's own ``RewardLoopWorker`` class, as each Ray actor runs it. On Ray:
verl's ``RewardLoopManager`` with ``reward.num_workers=2`` actors (verl_ray_cases.py, in
a loopback-only network namespace, like the Ray executor's tests). What does not run
here: the reward-model paths (``RewardModelManager``, routers), which need vLLM/SGLang
and a GPU.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, open_dict
from rlv_loopback import run_cases_loopback_only
from rlv_plugin_site import env_with_behaviour
from rlv_test_verifiers import Behaviour
from rlv_verl import Sample, batch, final_rewards, ppo_config, verl_config
from verl import DataProto
from verl.experimental.reward_loop import RewardLoopWorker
from verl.trainer.ppo.reward import resolve_reward_manager_cls

from rl_verifier import UserError, Verifier
from rl_verifier.integrations import verl as rlv_verl

Register = Callable[[type[Verifier]], type[Verifier]]
ROUTES = {"forecasts": "calibration", "trivia": "exact_match", "slow": "behaviour"}
SETTINGS = {"calibration": {"rule": "brier"}, "behaviour": {"timeout_s": 1.0}}
SAMPLES: list[Sample] = [
    ("forecasts", "<probability>0.9</probability>", {"outcome": 1}, {"index": 0}),
    ("trivia", "<answer>Paris</answer>", "Paris", {"index": 1}),
    ("trivia", "<answer>Lyon</answer>", "Paris", {"index": 1}),
    ("slow", "spin", "x", {"index": 2}),
    ("slow", "ok 0.75", "x", {"index": 2}),
]
KWARGS = {"routes": ROUTES, "settings": SETTINGS, "workers": 2, "failed_score": -0.5}
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def behaviour(register_verifier: Register) -> Iterator[None]:
    register_verifier(Behaviour)
    yield
    rlv_verl.close_scorers()


@pytest.fixture(scope="module")
def model_path() -> str:
    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model())


def ours(model_path: str, kwargs: dict[str, Any]) -> DictConfig:
    """verl's config with our reward manager and no custom reward function."""
    config = ppo_config()
    config.actor_rollout_ref.model.path = model_path
    manager = config.reward.reward_manager
    manager.source = "importlib"
    manager.name = "VerifierRewardManager"
    manager.module.path = "pkg://rl_verifier.integrations.verl_reward_loop"
    with open_dict(config.reward):
        config.reward.reward_kwargs = kwargs
    return config


def naive(model_path: str, name: str) -> DictConfig:
    """verl's config with its naive reward manager around our reward function ``name``."""
    config = verl_config(name, KWARGS)
    config.actor_rollout_ref.model.path = model_path
    return config


@pytest.mark.parametrize("setup", ["compute_score", "compute_score_async", "manager"])
def test_verls_reward_loop_worker_scores_with_it(model_path: str, setup: str) -> None:
    config = ours(model_path, KWARGS) if setup == "manager" else naive(model_path, setup)

    async def run() -> tuple[list[dict[str, Any]], DataProto]:
        worker = RewardLoopWorker(config)  # verl's own class, as its Ray actors run it
        data = batch(worker.input_tokenizer, SAMPLES)
        return list(await worker.compute_score_batch(data)), data

    outputs, data = asyncio.run(run())
    extra = [o["reward_extra_info"] for o in outputs]
    assert [e["rlv_status"] for e in extra] == ["ok", "ok", "ok", "timeout", "ok"]
    assert [e["rlv_judged"] for e in extra] == [1.0, 1.0, 1.0, 0.0, 1.0]
    # the Reward Loop takes one number per sample: the timeout gets failed_score
    scores = [o["reward_score"] for o in outputs]
    assert scores == pytest.approx([0.99, 1.0, 0.0, -0.5, 0.75])
    # which the manager class assembles into verl's token-level rm_scores
    rm_scores = resolve_reward_manager_cls(config).assemble_rm_scores(data, scores)
    assert final_rewards(data, rm_scores) == pytest.approx(scores)


def test_unknown_reward_kwargs_are_named(model_path: str) -> None:
    config = ours(model_path, {"route": ROUTES})

    async def build() -> None:
        RewardLoopWorker(config)

    with pytest.raises(UserError, match="unknown key 'route'"):
        asyncio.run(build())


@pytest.mark.slow
def test_reward_loop_manager_with_two_ray_workers(tmp_path: Path) -> None:
    """verl's ``RewardLoopManager`` (``reward.num_workers=2`` Ray actors); the actors
    find the test verifier ``behaviour`` as an installed plugin."""
    env = env_with_behaviour(tmp_path / "site")
    env.update(RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1")
    run_cases_loopback_only(Path(__file__).with_name("verl_ray_cases.py"), ROOT, env)
