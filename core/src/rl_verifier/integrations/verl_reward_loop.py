"""verl's Reward Loop: an rl-verifier reward manager for ``RewardLoopWorker``.

In a verl 0.9 config::

    reward.reward_manager.source=importlib
    reward.reward_manager.name=VerifierRewardManager
    reward.reward_manager.module.path=pkg://rl_verifier.integrations.verl_reward_loop
    +reward.reward_kwargs.routes.openai/gsm8k=exact_match

Each reward-loop worker (``reward.num_workers`` Ray actors) builds one manager; its
``run_single`` decodes one response and awaits its score on the worker's event loop
(no thread per sample), as the rollout of that sample ends. ``reward.reward_kwargs``
are ``compute_score_async``'s keywords (``spec``, ``routes``, ``settings``,
``components``, ``failed_score``, ``executor``, ``workers``). The Reward Loop scores one
sample at a time, so a ``timeout``/``error`` gets ``failed_score``; its
``rlv_judged`` is 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from rl_verifier.base.errors import UserError
from rl_verifier.integrations.verl import compute_score_async

KEYWORDS = frozenset(
    {"spec", "routes", "settings", "components", "failed_score", "executor", "workers"}
)


def reward_kwargs(config: DictConfig) -> dict[str, Any]:
    """``reward.reward_kwargs`` as plain data, checked against our keywords."""
    kept = config.reward.get("reward_kwargs") or {}
    plain = OmegaConf.to_container(kept, resolve=True) if isinstance(kept, DictConfig) else kept
    if not isinstance(plain, Mapping):
        raise UserError(f"reward.reward_kwargs must be a mapping, got {plain!r}")
    unknown = sorted(set(plain) - KEYWORDS)
    if unknown:
        raise UserError(
            f"reward.reward_kwargs: unknown key '{unknown[0]}' (known: {sorted(KEYWORDS)})"
        )
    return {str(k): v for k, v in plain.items()}


class VerifierRewardManager(RewardManagerBase):
    """Scores each response with the reward spec its ``data_source`` routes to."""

    def __init__(
        self,
        config: DictConfig,
        tokenizer: Any,
        compute_score: Any = None,
        reward_router_address: str | None = None,
        reward_model_tokenizer: Any = None,
    ) -> None:
        super().__init__(config, tokenizer, compute_score)
        self.kwargs = reward_kwargs(config)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        item = data[-1]  # of a multi-sequence sample, the last sequence is scored
        response = item.batch["responses"]
        length = int(item.batch["attention_mask"][-response.shape[-1] :].sum())
        text = await self.loop.run_in_executor(
            None, lambda: self.tokenizer.decode(response[:length], skip_special_tokens=True)
        )
        extra = dict(item.non_tensor_batch.get("extra_info") or {})
        result = await compute_score_async(
            item.non_tensor_batch["data_source"],
            text,
            item.non_tensor_batch["reward_model"]["ground_truth"],
            extra,
            **self.kwargs,
        )
        return {"reward_score": result["score"], "reward_extra_info": result}
