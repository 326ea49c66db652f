"""``rlv eval compare A B``: the paired difference B - A over the tasks both evals scored,
with its 95% t-interval over tasks; not significant when the interval holds 0."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rl_verifier.base.errors import UserError
from rl_verifier.evaluation.estimators import Interval, mean_interval
from rl_verifier.evaluation.files import SUMMARY


def load_summary(path: Path) -> dict[str, Any]:
    """An eval's summary: ``path`` is its folder or its ``summary.json``."""
    file = path / SUMMARY if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{file}: no such file (is {path} a finished eval?)") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{file}: cannot read: {exc}") from None
    if not isinstance(data, dict) or "per_task" not in data:
        raise UserError(f"{file}: not an eval summary")
    return data


def task_values(summary: dict[str, Any], metric: str) -> dict[str, float]:
    """Each task's figure: ``mean_reward`` or ``pass@K``."""
    out = {}
    for task in summary["per_task"]:
        if metric == "mean_reward":
            if task["mean_reward"]:
                out[task["task_id"]] = float(task["mean_reward"]["mean"])
        elif (k := metric.removeprefix("pass@")) in task["pass_at_k"]:
            out[task["task_id"]] = float(task["pass_at_k"][k])
    return out


def paired_interval(
    left: Mapping[str, float], right: Mapping[str, float]
) -> tuple[list[str], Interval | None]:
    """The tasks both have, and the 95% t-interval of right - left over them, task by task."""
    shared = sorted(set(left) & set(right))
    return shared, mean_interval([right[t] - left[t] for t in shared])


def paired(a: dict[str, Any], b: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """B - A over the tasks both have ``metric`` for; None when they share none."""
    left, right = task_values(a, metric), task_values(b, metric)
    shared, interval = paired_interval(left, right)
    if interval is None:
        return None
    return {
        "metric": metric,
        "tasks": len(shared),
        "a": sum(left[t] for t in shared) / len(shared),
        "b": sum(right[t] for t in shared) / len(shared),
        "difference": interval.as_dict(),
        "significant": significant(interval),
    }


def significant(interval: Interval) -> bool:
    if interval.low is None or interval.high is None:
        return False
    return interval.low > 0 or interval.high < 0


def compare(a_path: Path, b_path: Path) -> list[dict[str, Any]]:
    """Mean reward and each pass@k both evals report, paired by task."""
    a, b = load_summary(a_path), load_summary(b_path)
    ks = [k for k in a["overall"]["pass_at_k"] if k in b["overall"]["pass_at_k"]]
    results = [paired(a, b, metric) for metric in ["mean_reward", *(f"pass@{k}" for k in ks)]]
    found = [r for r in results if r is not None]
    if not found:
        raise UserError(f"{a_path} and {b_path} share no scored task")
    return found


def format_comparison(results: list[dict[str, Any]], a: Path, b: Path) -> str:
    lines = [f"B - A, paired by task (A = {a}, B = {b}); 95% t-interval over tasks"]
    for r in results:
        d = r["difference"]
        span = "" if d["low"] is None else f" [{d['low']:+.3f}, {d['high']:+.3f}]"
        verdict = "significant" if r["significant"] else "not significant"
        lines.append(
            f"  {r['metric']:<12} A {r['a']:.3f}  B {r['b']:.3f}  B-A {d['mean']:+.3f}{span}"
            f"  over {r['tasks']} tasks: {verdict}"
        )
    return "\n".join(lines)
