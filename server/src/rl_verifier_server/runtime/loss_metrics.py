"""Metrics of one forward_backward call, folded from each datum's loss terms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor

from rl_verifier_server.runtime.losses import LossTerms


@dataclass
class MetricTotals:
    """Folds LossTerms into ``name:reduction`` metrics over one forward_backward call.

    ``importance_ratio:{mean,min,max}`` and ``clip_fraction:mean`` are taken over positions with
    a non-zero advantage (prompt positions usually carry advantage 0 and a placeholder
    logprob); when a call has none, over all positions.
    """

    loss_sum: float = 0.0
    ratios_active: list[Tensor] = field(default_factory=list)
    ratios_all: list[Tensor] = field(default_factory=list)
    clipped_active: list[Tensor] = field(default_factory=list)
    clipped_all: list[Tensor] = field(default_factory=list)

    def add(self, terms: LossTerms, inputs: Mapping[str, Tensor]) -> None:
        self.loss_sum += float(terms.elementwise.detach().sum())
        if terms.ratio is None:
            return
        active = inputs["advantages"] != 0
        self.ratios_all.append(terms.ratio)
        self.ratios_active.append(terms.ratio[active])
        if terms.clipped is not None:
            self.clipped_all.append(terms.clipped)
            self.clipped_active.append(terms.clipped[active])

    def metrics(self) -> dict[str, float]:
        out = {"loss:sum": self.loss_sum}
        if self.ratios_all:
            active = torch.cat(self.ratios_active)
            ratios = active if active.numel() else torch.cat(self.ratios_all)
            out["importance_ratio:mean"] = float(ratios.double().mean())
            out["importance_ratio:min"] = float(ratios.min())
            out["importance_ratio:max"] = float(ratios.max())
        if self.clipped_all:
            active = torch.cat(self.clipped_active)
            clipped = active if active.numel() else torch.cat(self.clipped_all)
            out["clip_fraction:mean"] = float(clipped.double().mean())
        return out
