"""What a run logs: one metrics row and a few sample rows per step, and the progress line."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from rl_verifier.base.errors import UserError
from rl_verifier.scoring.summary import component_means, reward_stats, status_counts
from rl_verifier.train.rollouts import Batch


@dataclass(frozen=True)
class StepResult:
    """What one training step did, for its metrics row."""

    datums: int
    degenerate_groups_skipped: int
    training_s: float
    importance_ratio_mean: float | None
    kl_sampler_trainer: float | None


def metrics_row(
    batch: Batch, result: StepResult, waited_s: float, total_s: float
) -> dict[str, Any]:
    """The step's row of ``metrics.jsonl``."""
    rollouts = batch.rollouts
    scores = [r.score for r in rollouts]
    lengths = [sum(len(seg.tokens) for seg in r.episode.segments if seg.sampled) for r in rollouts]
    return {
        "step": batch.step,
        "phase": "rl",
        **{f"reward_{name}": value for name, value in reward_stats(scores).items()},
        "components": component_means(scores),
        "status": status_counts(scores),
        "degenerate_groups_skipped": result.degenerate_groups_skipped,
        "datums": result.datums,
        "tokens_sampled": sum(lengths),
        "completion_length_mean": fmean(lengths) if lengths else 0.0,
        "turns_mean": fmean(r.episode.turns for r in rollouts) if rollouts else 0.0,
        "tool_calls_mean": fmean(len(r.episode.tool_calls) for r in rollouts) if rollouts else 0.0,
        "tool_call_errors": sum(
            1 for r in rollouts for call in r.episode.tool_calls if "error" in call
        ),
        "importance_ratio_mean": result.importance_ratio_mean,
        "kl_sampler_trainer": result.kl_sampler_trainer,
        "sampler_lag": batch.step - batch.sampler_version,
        "scoring_busy_s": batch.scoring_busy_s,
        "time": {
            "sampling": batch.sampling_s,
            "scoring": batch.scoring_s,
            "training": result.training_s,
            "total": total_s,
            "waiting_for_batch": waited_s,
        },
    }


def sample_rows(batch: Batch, count: int) -> list[dict[str, Any]]:
    """The first ``count`` rollouts of the step, for ``samples.jsonl``."""
    return [
        {
            "step": batch.step,
            "task_id": rollout.task.id,
            "completion": rollout.episode.final_text,
            "turns": rollout.episode.turns,
            "reward": rollout.score.reward,
            "status": rollout.score.status.value,
            "components": rollout.score.components,
            "error": rollout.score.error,
        }
        for rollout in batch.rollouts[:count]
    ]


def check_failures(row: dict[str, Any], max_failed_share: float, run_path: Path) -> None:
    """Stop the run when too many samples of a step could not be scored."""
    status = row["status"]
    total = sum(status.values())
    failed = status.get("timeout", 0) + status.get("error", 0)
    if total and failed / total > max_failed_share:
        raise UserError(
            f"step {row['step']}: {failed} of {total} samples could not be scored "
            f"(timeout/error), above max_failed_share={max_failed_share}; "
            f"see {run_path / 'samples.jsonl'} and the verifier's errors"
        )


def step_line(row: dict[str, Any], steps: int) -> str:
    reward = row["reward_mean"]
    shown = "-" if reward is None else f"{reward:.3f}"
    status = row["status"]
    filled = round(20 * (row["step"] + 1) / steps)
    return (
        f"[{'#' * filled}{'.' * (20 - filled)}] "
        f"step {row['step'] + 1}/{steps}  reward {shown}  ok {status['ok']} invalid "
        f"{status['invalid']} timeout {status['timeout']} error {status['error']}  "
        f"{row['time']['total']:.1f}s"
    )


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
