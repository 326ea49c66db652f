"""What a run's held-out evals show: the paired differences between them, task by task (the
warm start's effect, RL's and the whole run's), and the last eval beside the trivial baseline.

``rlv train`` prints these lines after a run with evals (from the run the report reads), the
report's summary holds them, and ``benchmarks/recipe_held_out.py`` prints them. Every eval
samples the same tasks with the same seeds, so a task's mean reward at one eval pairs with its
mean at another; timeouts and errors are left out of a task's mean (they judge no output)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from rl_verifier.base.contracts import Status
from rl_verifier.evaluation.compare import paired_interval, significant
from rl_verifier.evaluation.estimators import Interval

Row = dict[str, Any]
JUDGED = frozenset(status.value for status in Status if status.judged)


@dataclass(frozen=True)
class Gain:
    """After - before over the tasks both evals judged, with its 95% t-interval."""

    name: str
    interval: Interval | None

    @property
    def significant(self) -> bool:
        return self.interval is not None and significant(self.interval)

    @property
    def label(self) -> str:
        return f"paired difference, {self.name}"

    def value(self) -> str:
        """``+0.148 [+0.101, +0.195] over 160 tasks (significant)``."""
        found = self.interval
        if found is None or found.low is None or found.high is None:
            return "too few shared tasks"
        verdict = "significant" if self.significant else "not significant"
        span = f"[{found.low:+.3f}, {found.high:+.3f}]"
        return f"{found.mean:+.3f} {span} over {found.count} tasks ({verdict})"

    def line(self) -> str:
        return f"{self.label}: {self.value()}"


def eval_label(row: Row) -> str:
    """When an eval ran: ``base model``, ``after the warm start`` or ``after N RL steps``."""
    stage = row.get("stage")
    if stage == "base" or (stage is None and row.get("trained_steps") == 0):
        return "base model"
    if stage == "warm_start":
        return "after the warm start"
    return f"after {row.get('trained_steps')} RL steps"


def task_means(samples: Sequence[Row], step: int) -> dict[str, float]:
    """Each task's mean reward at the eval logged with ``step`` (judged samples only)."""
    rewards: dict[str, list[float]] = {}
    for sample in samples:
        score = sample.get("score") or {}
        if sample.get("step") == step and score.get("status") in JUDGED:
            rewards.setdefault(str(sample["task_id"]), []).append(float(score["reward"]))
    return {task: fmean(values) for task, values in rewards.items()}


def paired_gains(samples: Sequence[Row], evals: Sequence[Row]) -> list[Gain]:
    """The warm start's gain (base to after it), RL's (its first eval to the last) and the
    whole run's (first to last), each where the run has both evals."""
    if not evals:
        return []
    by_stage = {row.get("stage"): row for row in evals}
    pairs: list[tuple[str, Row, Row]] = []
    if "base" in by_stage and "warm_start" in by_stage:
        pairs.append(("warm start (after it - base)", by_stage["base"], by_stage["warm_start"]))
    first_rl = by_stage.get("warm_start") or evals[0]
    last = evals[-1]
    if last is not first_rl:
        pairs.append((f"RL ({eval_label(last)} - {eval_label(first_rl)})", first_rl, last))
    if evals[0] is not first_rl and last is not evals[0]:
        pairs.append(("whole run (last - base)", evals[0], last))
    return [Gain(name, difference(samples, a["step"], b["step"])) for name, a, b in pairs]


def difference(samples: Sequence[Row], before: int, after: int) -> Interval | None:
    """After - before, task by task, over the tasks both evals judged."""
    return paired_interval(task_means(samples, before), task_means(samples, after))[1]


def trivial_baseline(config: Row) -> tuple[float, str] | None:
    """The config's trivial-policy reward (``baseline_reward``, a finite number) and its
    label (``baseline_label``, else "trivial baseline"); None when it names none."""
    value = config.get("baseline_reward")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    label = config.get("baseline_label")
    return float(value), label if isinstance(label, str) and label else "trivial baseline"


def baseline_verdict(evals: Sequence[Row], config: Row) -> tuple[str, str] | None:
    """Whether the last eval's 95% lower bound clears the config's trivial baseline, as a
    (label, text) pair; None without evals or a baseline."""
    found = trivial_baseline(config)
    if not evals or found is None:
        return None
    value, named = found
    label = f"held-out {eval_label(evals[-1])} vs {named} ({value:.3f})"
    figure = evals[-1].get("eval", {}).get("mean_reward") or {}
    low = figure.get("low")
    if figure.get("mean") is None or low is None:
        return label, "no interval to compare"
    verdict = "clears it" if low > value else "does not clear it"
    return label, f"the 95% lower bound {low:.3f} {verdict}"


def gain_lines(samples: Sequence[Row], evals: Sequence[Row], config: Row) -> list[str]:
    """The paired differences, then the baseline line: what ``rlv train`` prints."""
    if len(evals) < 2:
        lines = ["paired difference: one held-out eval only"] if evals else []
    else:
        lines = [gain.line() for gain in paired_gains(samples, evals)]
    found = baseline_verdict(evals, config)
    return [*lines, f"{found[0]}: {found[1]}"] if found else lines
