"""Batch calibration figures over (probability, outcome) pairs, in pure Python."""

from __future__ import annotations

import bisect
import math
import sys
from collections.abc import Sequence

Pair = tuple[float, int]
# scikit-learn's log_loss clips to [eps, 1 - eps] with the float64 machine epsilon.
LOG_LOSS_EPS = sys.float_info.epsilon


def brier_score(pairs: Sequence[Pair]) -> float:
    """Mean squared error of the probabilities (lower is better)."""
    return math.fsum((p - y) ** 2 for p, y in pairs) / len(pairs)


def log_loss(pairs: Sequence[Pair]) -> float:
    """Mean negative natural log of the probability given to the outcome, as
    ``sklearn.metrics.log_loss`` computes it (each class's probability clipped)."""
    losses = []
    for p, y in pairs:
        q = p if y == 1 else 1.0 - p
        losses.append(-math.log(min(max(q, LOG_LOSS_EPS), 1.0 - LOG_LOSS_EPS)))
    return math.fsum(losses) / len(pairs)


def bin_index(probability: float, bins: int, upper_edges: Sequence[float]) -> int:
    """Bin ``i`` holds (i/B, (i+1)/B]; 0 goes to bin 0."""
    return min(bisect.bisect_left(upper_edges, probability), bins - 1)


def expected_calibration_error(pairs: Sequence[Pair], bins: int) -> float:
    """Sum over equal-width bins of (share of samples) * |mean probability - hit rate|."""
    upper_edges = [(i + 1) / bins for i in range(bins)]
    grouped: dict[int, list[Pair]] = {}
    for pair in pairs:
        grouped.setdefault(bin_index(pair[0], bins, upper_edges), []).append(pair)
    error = 0.0
    for members in grouped.values():
        confidence = math.fsum(p for p, _ in members) / len(members)
        accuracy = sum(y for _, y in members) / len(members)
        error += len(members) / len(pairs) * abs(confidence - accuracy)
    return error


def calibration_metrics(pairs: Sequence[Pair], bins: int) -> dict[str, float]:
    """``n``, ``base_rate``, ``brier``, ``log_loss``, ``ece`` and, unless every outcome
    is the same, ``brier_skill`` (1 - brier / brier of always forecasting the base rate)."""
    n = len(pairs)
    if n == 0:
        return {"n": 0}
    base_rate = sum(y for _, y in pairs) / n
    brier = brier_score(pairs)
    metrics = {
        "n": n,
        "base_rate": base_rate,
        "brier": brier,
        "log_loss": log_loss(pairs),
        "ece": expected_calibration_error(pairs, bins),
    }
    if 0.0 < base_rate < 1.0:
        metrics["brier_skill"] = 1.0 - brier / (base_rate * (1.0 - base_rate))
    return metrics


def as_pair(probability: object, outcome: object) -> Pair | None:
    """A checked (probability in [0, 1], outcome 0/1) pair, or None."""
    if isinstance(probability, bool) or not isinstance(probability, int | float):
        return None
    if not (math.isfinite(probability) and 0.0 <= probability <= 1.0):
        return None
    if not isinstance(outcome, int | float) or outcome not in (0, 1):
        return None
    return (float(probability), int(outcome))
