"""Group-relative advantages: each sample's reward compared with its group's."""

from __future__ import annotations

import math
from typing import Literal

AdvantageMethod = Literal["mean", "std", "loo"]


def group_advantages(
    rewards: list[float], method: AdvantageMethod = "mean", eps: float = 1e-6
) -> list[float]:
    """Advantages for one group of samples of the same task.

    ``mean``: ``r - mean(r)``. ``std``: ``(r - mean(r)) / (std(r) + eps)`` with the population
    standard deviation. ``loo`` (RLOO): ``r_i`` minus the mean of the other rewards; a group of
    one gets 0. An empty group gives an empty list. Raises ValueError for an unknown method or
    a non-finite reward.
    """
    if method not in ("mean", "std", "loo"):
        raise ValueError(f"unknown advantage method {method!r}; expected mean, std or loo")
    values = [float(r) for r in rewards]
    if not all(math.isfinite(r) for r in values):
        raise ValueError(f"rewards must be finite, got {values}")
    n = len(values)
    if n == 0:
        return []
    total = math.fsum(values)
    mean = total / n
    if method == "mean":
        return [r - mean for r in values]
    if method == "std":
        std = math.sqrt(math.fsum((r - mean) ** 2 for r in values) / n)
        return [(r - mean) / (std + eps) for r in values]
    if n == 1:
        return [0.0]
    return [r - (total - r) / (n - 1) for r in values]


def is_degenerate(rewards: list[float], tol: float = 1e-9) -> bool:
    """Whether all rewards are equal (within ``tol``), so the group carries no signal.

    Empty groups and groups of one are degenerate.
    """
    if len(rewards) < 2:
        return True
    return max(rewards) - min(rewards) <= tol
