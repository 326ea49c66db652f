"""What every trainer adapter needs: task ids, judged-or-not, and per-batch figures."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rl_verifier.base.contracts import Score, Status


class VerifierUnfinished(RuntimeError):
    """A check that did not finish (``timeout``/``error``), raised where the trainer
    records an exception as a failed sample rather than a wrong answer."""


def unfinished(score: Score) -> VerifierUnfinished:
    """The exception for a ``timeout``/``error`` score, naming both."""
    return VerifierUnfinished(f"rl-verifier {score.status.value}: {score.error or ''}")


def prompt_id(prompt: Any) -> str:
    """A stable task id for a prompt, so the samples of one prompt share it."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return "p-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def trainable_reward(score: Score) -> float | None:
    """The reward to train on, or ``None`` when the check did not finish (``timeout``,
    ``error``): no judgement of the model, so not a reward of 0 either."""
    return score.reward if score.status.judged else None


def judged_mean(scores: Iterable[Score | None], empty: float = 0.0) -> float:
    """The mean reward of the judged scores (``empty`` when none was judged): what a failed
    sample of a group is filled with, so that it adds nothing to the group's centering."""
    judged = [s.reward for s in scores if s is not None and s.status.judged]
    return sum(judged) / len(judged) if judged else empty


def group_means(task_ids: Sequence[str], scores: Sequence[Score]) -> dict[str, float]:
    """``judged_mean`` of each task's scores (tasks with no judged score left out)."""
    groups: dict[str, list[Score]] = {}
    for task_id, score in zip(task_ids, scores, strict=True):
        groups.setdefault(task_id, []).append(score)
    judged = {task_id: group for task_id, group in groups.items() if any_judged(group)}
    return {task_id: judged_mean(group) for task_id, group in judged.items()}


def any_judged(scores: Iterable[Score]) -> bool:
    return any(s.status.judged for s in scores)


def metric_name(spec: str) -> str:
    """A short identifier for a reward spec: ``0.8*pytest + 0.2*format`` -> ``pytest_format``."""
    names = re.findall(r"[A-Za-z_]\w*", spec)
    return "_".join(dict.fromkeys(names)) or "reward"


def batch_figures(scores: Sequence[Score]) -> dict[str, float]:
    """Each component's mean over the judged samples that report it, and the share of
    each status: ``{"pytest": 0.4, "status/timeout": 0.125, ...}``."""
    figures: dict[str, float] = {}
    if not scores:
        return figures
    for status in Status:
        figures[f"status/{status.value}"] = sum(s.status is status for s in scores) / len(scores)
    judged = [s for s in scores if s.status.judged]
    for name in _component_names(judged):
        values = [s.components[name] for s in judged if name in s.components]
        figures[name] = sum(values) / len(values)
    return figures


def _component_names(scores: Iterable[Score]) -> list[str]:
    return list(dict.fromkeys(name for s in scores for name in s.components))
