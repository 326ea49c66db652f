"""G-Eval-style scores from the judge's token probabilities: the probability-weighted mean
of the score digits among the first reply token's alternatives. A judge that puts too
little probability on any score digit has not scored: a ``LowMass`` problem, never 0."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rl_verifier_judge.parsing import ParseProblem

Alternatives = list[tuple[str, float]]  # (token text, logprob) at the reply's first token


class LowMass(ParseProblem):
    """The score digits hold less than the required share of the first token's probability."""

    def __init__(self, reason: str, mass: float, distribution: dict[str, float]) -> None:
        super().__init__(reason)
        self.mass, self.distribution = mass, distribution


@dataclass(frozen=True)
class ProbableScore:
    """The expected score, the probability the score digits hold, and theirs each."""

    score: float
    mass: float
    distribution: dict[str, float]

    def info(self) -> dict[str, Any]:
        return {"score_mass": round(self.mass, 6), "score_distribution": self.distribution}


def _pairs(entries: Any) -> Alternatives | None:
    """``[{"token", "logprob"}, ...]`` (chat) or ``{token: logprob}`` (completions)."""
    if isinstance(entries, dict):
        entries = [{"token": k, "logprob": v} for k, v in entries.items()]
    if not isinstance(entries, list):
        return None
    found: Alternatives = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("token"), str):
            logprob = entry.get("logprob")
            if isinstance(logprob, int | float) and not isinstance(logprob, bool):
                found.append((entry["token"], float(logprob)))
    return found


def first_alternatives(logprobs: Any) -> Alternatives | None:
    """The first token's alternatives from a choice's ``logprobs``, in the shape OpenAI and
    vLLM chat send (``content[0].top_logprobs``, the sampled token added when missing) or
    the completions shape (``top_logprobs[0]`` a ``{token: logprob}`` mapping)."""
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        found = _pairs(first.get("top_logprobs")) or []
        sampled = _pairs([first])
        if sampled and sampled[0][0] not in {token for token, _ in found}:
            found.append(sampled[0])
        return found or None
    tops = logprobs.get("top_logprobs")
    if isinstance(tops, list) and tops:
        return _pairs(tops[0]) or None
    return None


def expected_score(
    alternatives: Alternatives, scale: tuple[float, float], min_mass: float
) -> ProbableScore:
    """Mean of the scale's digits weighted by their probabilities (``" 4"`` and ``"4"``
    count as one), renormalised over the digits; ``LowMass`` below ``min_mass``."""
    low, high = int(scale[0]), int(scale[1])
    digits = {str(n): 0.0 for n in range(low, high + 1)}
    for token, logprob in alternatives:
        key = token.strip()
        if key in digits and math.isfinite(logprob):
            digits[key] += math.exp(logprob)
    mass = sum(digits.values())
    distribution = {k: round(v, 6) for k, v in digits.items()}
    if mass < min_mass:
        raise LowMass(
            f"the score digits {low}..{high} hold {mass:.3f} of the first token's "
            f"probability, less than min_score_mass={min_mass:g}",
            mass,
            distribution,
        )
    score = sum(int(k) * v for k, v in digits.items()) / mass
    return ProbableScore(min(max(score, low), high), mass, distribution)
