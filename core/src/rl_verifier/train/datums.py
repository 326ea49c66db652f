"""Training datums from a batch: group advantages over judged samples, packed for the loss."""

from __future__ import annotations

import math
from statistics import fmean
from typing import Any

from rl_verifier.train.advantages import group_advantages, is_degenerate
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.packing import PackedDatum, pack
from rl_verifier.train.rollouts import Batch, Rollout


def build_datums(batch: Batch, config: TrainConfig) -> tuple[list[PackedDatum], int]:
    """The batch's datums, and how many groups were skipped (too few usable samples, or all
    rewards equal). ``timeout``/``error`` samples are dropped, or scored 0 when
    ``failed_scores = "zero"``: never read as the verifier's judgement."""
    datums: list[PackedDatum] = []
    skipped = 0
    for group in batch.groups:
        kept: list[tuple[Rollout, float]] = []
        for rollout in group:
            if rollout.score.status.judged:
                kept.append((rollout, rollout.score.reward))
            elif config.failed_scores == "zero":
                kept.append((rollout, 0.0))
        rewards = [reward for _, reward in kept]
        if len(kept) < 2 or (config.skip_degenerate_groups and is_degenerate(rewards)):
            skipped += 1
            continue
        advantages = group_advantages(rewards, config.advantage)
        for (rollout, _), advantage in zip(kept, advantages, strict=True):
            datums.append(pack(rollout.episode.segments, advantage))
    return datums, skipped


def drift(packed: list[PackedDatum], output: Any) -> tuple[float | None, float | None]:
    """Mean importance ratio and KL(sampler || trainer) over sampled tokens (k3 estimator)."""
    ratios: list[float] = []
    kls: list[float] = []
    for datum, out in zip(packed, output.loss_fn_outputs, strict=True):
        trainer = out["logprobs"].tolist()
        for lp_train, lp_sample, mask in zip(trainer, datum.logprobs, datum.mask, strict=True):
            if mask:
                delta = lp_train - lp_sample
                ratios.append(math.exp(delta))
                kls.append(math.exp(delta) - 1 - delta)
    if not ratios:
        return None, None
    return fmean(ratios), fmean(kls)
