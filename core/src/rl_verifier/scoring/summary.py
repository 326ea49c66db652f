"""The end-of-run summary: counts, mean reward, statuses, components, batch metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from rl_verifier.base.contracts import Score, Status


def reward_stats(scores: Iterable[Score]) -> dict[str, float | None]:
    """Mean, spread and range of the rewards of judged samples (ok and invalid) only:
    a timeout or an error says nothing about the model."""
    rewards = [s.reward for s in scores if s.status.judged]
    if not rewards:
        return {"mean": None, "std": None, "min": None, "max": None}
    return {
        "mean": fmean(rewards),
        "std": pstdev(rewards),
        "min": min(rewards),
        "max": max(rewards),
    }


def component_means(scores: Iterable[Score]) -> dict[str, float]:
    """Each reward component's mean over the samples with status ok."""
    ok = [s for s in scores if s.status is Status.OK]
    names = sorted({name for s in ok for name in s.components})
    return {n: fmean(s.components[n] for s in ok if n in s.components) for n in names}


def status_counts(scores: Iterable[Score]) -> dict[str, int]:
    """How many samples ended with each status (every status listed)."""
    counts = Counter(score.status for score in scores)
    return {status.value: counts.get(status, 0) for status in Status}


def summarise_scores(scores: Sequence[Score], metrics: dict[str, float]) -> dict[str, Any]:
    """Figures over a batch (``rlv verify``'s summary)."""
    return {
        "count": len(scores),
        "tasks": len({s.task_id for s in scores}),
        "mean_reward": reward_stats(scores)["mean"],
        "status": status_counts(scores),
        "components": component_means(scores),
        "metrics": metrics,
    }


def format_summary(summary: dict[str, Any], out_path: Path) -> str:
    mean = summary["mean_reward"]
    lines = [
        f"scored {summary['count']} completions of {summary['tasks']} tasks -> {out_path}",
        f"  {'verifier':<22} {', '.join(summary.get('verifier', []))}",
        f"  {'count':<22} {summary['count']}",
        f"  {'mean reward (judged)':<22} {'-' if mean is None else f'{mean:.4f}'}",
        f"  {'status':<22} " + "  ".join(f"{k} {v}" for k, v in summary["status"].items()),
    ]
    if summary["components"]:
        lines.append("components (mean over ok)")
        lines += [f"  {name:<22} {value:.4f}" for name, value in summary["components"].items()]
    if summary["metrics"]:
        lines.append("batch metrics")
        lines += [f"  {name:<22} {value:.6g}" for name, value in summary["metrics"].items()]
    return "\n".join(lines)
