"""Proper scoring rules, as rewards where higher is better."""

from __future__ import annotations

import math
from typing import Literal

Rule = Literal["brier", "log", "spherical", "rlcr"]
RULES: tuple[Rule, ...] = ("brier", "log", "spherical", "rlcr")


def given_to_outcome(probability: float, outcome: int) -> float:
    """The probability the forecast gave to what happened."""
    return probability if outcome == 1 else 1.0 - probability


def brier(probability: float, outcome: int) -> float:
    """1 - (p - y)^2, in [0, 1]."""
    return 1.0 - (probability - outcome) ** 2


def log_score(probability: float, outcome: int, epsilon: float) -> float:
    """1 + log2 q, with q the probability given to the outcome floored at ``epsilon``;
    in [1 + log2(epsilon), 1]."""
    return 1.0 + math.log2(max(given_to_outcome(probability, outcome), epsilon))


def spherical(probability: float, outcome: int) -> float:
    """q / sqrt(p^2 + (1 - p)^2), in [0, 1]."""
    norm = math.sqrt(probability**2 + (1.0 - probability) ** 2)
    return given_to_outcome(probability, outcome) / norm


def rlcr(confidence: float, correct: int) -> float:
    """RLCR: correctness minus the Brier penalty of the stated confidence, in [-1, 1]."""
    return correct - (confidence - correct) ** 2


def score(rule: Rule, probability: float, outcome: int, epsilon: float) -> float:
    """The reward ``rule`` gives forecast ``probability`` (of outcome 1). For ``rlcr``
    pass the confidence and the correctness instead."""
    if rule == "brier":
        return brier(probability, outcome)
    if rule == "log":
        return log_score(probability, outcome, epsilon)
    if rule == "spherical":
        return spherical(probability, outcome)
    return rlcr(probability, outcome)


def rule_bounds(rule: Rule, epsilon: float) -> tuple[float, float]:
    """Lowest and highest reward ``rule`` can give."""
    if rule == "log":
        return (1.0 + math.log2(epsilon), 1.0)
    if rule == "rlcr":
        return (-1.0, 1.0)
    return (0.0, 1.0)
