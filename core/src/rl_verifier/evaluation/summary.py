"""Per-task and overall figures of an eval's sample rows.

Only judged samples (``ok``/``invalid``) enter the estimates; ``timeout``/``error`` ones are
counted by status and left out. A task's pass@k needs at least ``k`` judged samples;
overall figures are means over the tasks that have one, with a t-interval over tasks
(the tasks, not the samples, are the independent draws). cons@k is the majority vote of a
task's first ``k`` judged samples that report an ``answer`` (in ``score.info``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

from rl_verifier.base.contracts import Status
from rl_verifier.evaluation.estimators import majority_correct, mean_interval, pass_at_k
from rl_verifier.parsing.answers import normalise_answer

JUDGED = {Status.OK.value, Status.INVALID.value}


def by_task(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by task, each group in sample-index order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["task_id"], []).append(row)
    return {task: sorted(group, key=lambda r: r["sample_index"]) for task, group in groups.items()}


def answer_of(row: dict[str, Any]) -> str | None:
    answer = row["score"].get("info", {}).get("answer")
    return normalise_answer(str(answer)) if isinstance(answer, str | int | float) else None


def task_figures(
    task_id: str, rows: Sequence[dict[str, Any]], ks: Sequence[int], threshold: float
) -> dict[str, Any]:
    """One task's statuses, mean reward, pass@k, cons@k and tokens."""
    judged = [r for r in rows if r["score"]["status"] in JUDGED]
    rewards = [float(r["score"]["reward"]) for r in judged]
    correct = sum(1 for reward in rewards if reward >= threshold)
    votes = [(a, r["score"]["reward"] >= threshold) for r in judged if (a := answer_of(r))]
    interval = mean_interval(rewards)
    return {
        "task_id": task_id,
        "samples": len(rows),
        "judged": len(judged),
        "correct": correct,
        "status": status_counts(rows),
        "mean_reward": interval.as_dict() if interval else None,
        "pass_at_k": {str(k): pass_at_k(len(judged), correct, k) for k in ks if k <= len(judged)},
        "cons_at_k": {
            str(k): float(bool(majority_correct(votes[:k]))) for k in ks if k <= len(votes)
        },
        "tokens": sum(int(r.get("tokens", 0)) for r in rows),
    }


def status_counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(r["score"]["status"] for r in rows)
    return {status.value: counts.get(status.value, 0) for status in Status}


def over_tasks(tasks: Sequence[dict[str, Any]], key: str, ks: Sequence[int]) -> dict[str, Any]:
    """For each k, the mean of the tasks' ``key`` figure with its interval."""
    out = {}
    for k in ks:
        values = [t[key][str(k)] for t in tasks if str(k) in t[key]]
        interval = mean_interval(values)
        if interval is not None:
            out[str(k)] = interval.as_dict()
    return out


def summarise(
    rows: Sequence[dict[str, Any]],
    task_ids: Sequence[str],
    ks: Sequence[int],
    threshold: float,
) -> dict[str, Any]:
    """The figures of ``summary.json``: ``overall`` and ``per_task`` (in ``task_ids`` order)."""
    groups = by_task(rows)
    tasks = [task_figures(t, groups.get(t, []), ks, threshold) for t in task_ids]
    means = [t["mean_reward"]["mean"] for t in tasks if t["mean_reward"]]
    reward = mean_interval(means)
    tokens = sum(t["tokens"] for t in tasks)
    return {
        "overall": {
            "tasks": len(tasks),
            "samples": len(rows),
            "status": status_counts(rows),
            "mean_reward": reward.as_dict() if reward else None,
            "pass_at_k": over_tasks(tasks, "pass_at_k", ks),
            "cons_at_k": over_tasks(tasks, "cons_at_k", ks),
            "tokens": tokens,
            "tokens_per_sample": tokens / len(rows) if rows else None,
            "sampling_s": sum(float(r.get("sampling_s", 0.0)) for r in rows),
            "scoring_s": sum(float(r["score"].get("elapsed_s", 0.0)) for r in rows),
            "sample_s_mean": fmean(float(r.get("sampling_s", 0.0)) for r in rows) if rows else None,
        },
        "per_task": tasks,
    }
