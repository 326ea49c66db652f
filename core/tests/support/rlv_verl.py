"""verl's own config and rollout batches, for the tests of our verl adapters."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import verl
from omegaconf import DictConfig, OmegaConf
from verl import DataProto

# (data_source, response, ground_truth, extra_info)
Sample = tuple[str, str, Any, dict[str, Any]]


def ppo_config() -> DictConfig:
    """verl's own generated PPO trainer config."""
    path = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(path)
    assert isinstance(config, DictConfig)
    return config


def verl_config(name: str, reward_kwargs: dict[str, Any]) -> DictConfig:
    """verl's config pointed at our custom reward function ``name``."""
    config = ppo_config()
    config.reward.custom_reward_function.path = "pkg://rl_verifier.integrations.verl"
    config.reward.custom_reward_function.name = name
    config.reward.custom_reward_function.reward_kwargs = reward_kwargs
    return config


def batch(tokenizer: Any, samples: Sequence[Sample]) -> DataProto:
    """A rollout batch as verl builds it: left-padded prompts, right-padded responses."""
    prompts = [tokenizer.encode("question", add_special_tokens=False) for _ in samples]
    responses = [tokenizer.encode(s[1], add_special_tokens=False) for s in samples]
    width_p, width_r = max(map(len, prompts)), max(map(len, responses))
    prompt_ids = torch.zeros(len(samples), width_p, dtype=torch.long)
    response_ids = torch.zeros(len(samples), width_r, dtype=torch.long)
    mask = torch.zeros(len(samples), width_p + width_r, dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        prompt_ids[i, width_p - len(p) :] = torch.tensor(p)
        response_ids[i, : len(r)] = torch.tensor(r)
        mask[i, width_p - len(p) : width_p + len(r)] = 1
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array([s[0] for s in samples], dtype=object),
            "reward_model": np.array([{"ground_truth": s[2]} for s in samples], dtype=object),
            "extra_info": np.array([dict(s[3]) for s in samples], dtype=object),
        },
    )


def final_rewards(data: DataProto, scores: torch.Tensor) -> list[float]:
    """Each response's reward: the token-level scores at its last token."""
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[1] :].sum(dim=1)
    return [float(scores[i, lengths[i] - 1]) for i in range(len(data))]
