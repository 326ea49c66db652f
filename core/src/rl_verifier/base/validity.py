"""What makes a verdict or a score row fit to use, fresh from a verifier or read back from
a file rl-verifier wrote earlier (the verdict cache, ``rlv verify``'s ``OUT.partial``, an
eval's ``samples.jsonl``): one set of checks for both, so a row read back is held to what
a fresh verdict must be.

Each check returns ``None`` when the verdict or row is fit, else a phrase saying why not.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from rl_verifier.base.contracts import Score, Status, Verdict, VerifierRef
from rl_verifier.base.errors import validation_problems
from rl_verifier.base.reward import Reward
from rl_verifier.base.verifier import Verifier

TOLERANCE = 1e-9  # rewards are compared to their bounds (and sums to parts) within this


def range_problem(verifier: Verifier, reward: float) -> str | None:
    """Why ``reward`` cannot be an ``ok`` reward of ``verifier``: outside its bounds."""
    low, high = verifier.bounds()
    if low - TOLERANCE <= reward <= high + TOLERANCE:
        return None
    return f"reward {reward} outside its declared range [{low}, {high}]"


def reusable_problem(verifier: Verifier | None, verdict: Verdict) -> str | None:
    """Why a verdict, as ``verifier`` returned it (no penalty applied yet), cannot be kept
    for reuse: it says nothing about the sample (``timeout``/``error``), or its reward is
    one ``verifier`` cannot give. Without ``verifier`` only the status is checked."""
    if not verdict.status.judged:
        return f"status {verdict.status.value} is never kept"
    if verifier is not None and verdict.status is Status.OK:
        return range_problem(verifier, verdict.reward)
    return None


def settled_problem(verifier: Verifier, verdict: Verdict) -> str | None:
    """Why ``verdict`` is not one the engine gives for ``verifier`` once penalties are
    applied: ``invalid`` earns the invalid penalty, ``timeout``/``error`` earn 0, ``ok`` a
    reward within the verifier's bounds."""
    if verdict.status is Status.OK:
        return range_problem(verifier, verdict.reward)
    due = verifier.config.invalid_penalty if verdict.status is Status.INVALID else 0.0
    if abs(verdict.reward - due) > TOLERANCE:
        return f"reward {verdict.reward} with status {verdict.status.value} (it earns {due})"
    return None


def describe(ref: VerifierRef) -> str:
    return f"{ref.name} {ref.version} (config {ref.config_hash})"


def score_problem(reward: Reward, score: Score) -> str | None:
    """Why a score row read back cannot stand for one ``reward`` would give now: another
    verifier, release or settings (``config_hash``, files' contents included), a part
    whose reward its status or verifier rules out, a total that does not follow from its
    parts."""
    if score.verifier != reward.ref:
        return f"scored by {describe(score.verifier)}, not by this run's {describe(reward.ref)}"
    try:
        parts = reward.split(score)
    except (TypeError, ValueError):
        return "its parts (components, info) are not those of this reward"
    verdicts = {}
    for name, part in parts.items():
        verdict = Verdict(status=part.status, reward=part.reward)
        problem = settled_problem(reward.verifiers[name], verdict)
        if problem is not None:
            return problem if reward.single else f"{name}: {problem}"
        verdicts[name] = verdict
    if not reward.single:
        combined = reward.combine(verdicts)
        if combined.status is not score.status or abs(combined.reward - score.reward) > max(
            TOLERANCE, TOLERANCE * abs(combined.reward)
        ):
            return (
                f"reward {score.reward} with status {score.status.value}: its parts give "
                f"{combined.reward} with status {combined.status.value}"
            )
    return None


def read_score(data: Any) -> Score | str:
    """A score row read back, validated as JSON rl-verifier writes (exact types, a finite
    reward, a known status), or why it is not one."""
    try:
        return Score.model_validate_json(json.dumps(data, allow_nan=True), strict=True)
    except ValidationError as exc:
        problems = validation_problems(exc)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"not a score row: {problems[0]}{more}"
    except (TypeError, ValueError, RecursionError):
        return "not a score row"


def checked_score(data: Any, reward: Reward) -> Score | str:
    """``read_score`` and ``score_problem`` together: the row if it can be reused as
    ``reward``'s, else why not."""
    score = read_score(data)
    if isinstance(score, str):
        return score
    return score_problem(reward, score) or score
