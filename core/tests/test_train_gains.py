"""Held-out gains: paired by task, judged samples only, beside the trivial baseline."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier.train.gains import baseline_verdict, gain_lines, paired_gains


def sample(step: int, task: str, reward: float, status: str = "ok") -> dict[str, Any]:
    return {"step": step, "task_id": task, "score": {"reward": reward, "status": status}}


def eval_row(step: int, stage: str, trained: int, mean: float, low: float) -> dict[str, Any]:
    figure = {"mean": mean, "low": low, "high": 2 * mean - low, "count": 4}
    return {"step": step, "stage": stage, "trained_steps": trained, "eval": {"mean_reward": figure}}


EVALS = [
    eval_row(-4, "base", 0, 0.1, 0.0),
    eval_row(-1, "warm_start", 0, 0.5, 0.4),
    eval_row(9, "rl", 10, 0.8, 0.7),
]


def test_each_stage_is_paired_task_by_task_and_failures_are_left_out() -> None:
    samples = [
        *(sample(-4, t, 0.0) for t in "abcd"),
        *(sample(-1, t, r) for t, r in zip("abcd", [0.5, 0.4, 0.6, 0.5], strict=True)),
        *(sample(9, t, r) for t, r in zip("abc", [0.9, 0.8, 1.0], strict=True)),
        sample(9, "d", 0.0, "error"),  # infrastructure failed: task d has no figure after RL
        sample(9, "a", 0.7),  # a second sample of a: its task's mean is 0.8
    ]
    gains = {g.name: g for g in paired_gains(samples, EVALS)}
    assert list(gains) == [
        "warm start (after it - base)",
        "RL (after 10 RL steps - after the warm start)",
        "whole run (last - base)",
    ]
    rl = gains["RL (after 10 RL steps - after the warm start)"].interval
    assert rl is not None and rl.count == 3  # a, b, c
    assert rl.mean == pytest.approx(((0.8 - 0.5) + (0.8 - 0.4) + (1.0 - 0.6)) / 3)
    assert gains["warm start (after it - base)"].interval.count == 4  # type: ignore[union-attr]
    assert all(g.significant for g in gains.values())


def test_a_difference_whose_interval_holds_zero_is_not_significant() -> None:
    samples = [sample(-1, t, 0.5) for t in "abcd"]
    samples += [sample(9, t, r) for t, r in zip("abcd", [0.7, 0.3, 0.6, 0.4], strict=True)]
    (gain,) = paired_gains(samples, EVALS[1:])
    assert not gain.significant
    assert gain.line().endswith("over 4 tasks (not significant)")


def test_the_last_eval_is_read_beside_the_baseline_by_its_lower_bound() -> None:
    config = {"baseline_reward": 0.75, "baseline_label": "always 0.5"}
    label, text = baseline_verdict(EVALS, config) or ("", "")
    assert label == "held-out after 10 RL steps vs always 0.5 (0.750)"
    assert text == "the 95% lower bound 0.700 does not clear it"  # mean 0.8, bound 0.7
    assert baseline_verdict(EVALS, {"baseline_reward": 0.6}) == (
        "held-out after 10 RL steps vs trivial baseline (0.600)",
        "the 95% lower bound 0.700 clears it",
    )
    assert baseline_verdict(EVALS, {}) is None


def test_one_eval_says_so_instead_of_a_difference() -> None:
    assert gain_lines([], EVALS[:1], {}) == ["paired difference: one held-out eval only"]
    assert gain_lines([], [], {"baseline_reward": 0.5}) == []
