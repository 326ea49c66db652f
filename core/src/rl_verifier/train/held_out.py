"""Held-out evals during training: the current sampler on ``eval_tasks``, sampled, scored
and summarised by ``rl_verifier.evaluation`` as ``rlv eval`` does, logged as one
``phase = "eval"`` row of ``metrics.jsonl`` and its samples in ``eval_samples.jsonl``.

Each row names its ``stage``: ``base`` (the base model, before a warm start; only runs with
one), ``warm_start`` (after the warm start, before the first RL step) or ``rl`` (after RL
steps; without a warm start the eval before the first step is ``base``)."""

from __future__ import annotations

import time
from typing import Any, Literal

from rl_verifier.evaluation.runner import Plan as EvalPlan
from rl_verifier.evaluation.runner import run_missing
from rl_verifier.evaluation.sampling import Sampler, SamplingSettings
from rl_verifier.evaluation.summary import summarise
from rl_verifier.scoring.engine import ScoringEngine
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.preflight import Plan
from rl_verifier.train.renderer import Renderer

FIGURES = ("tasks", "samples", "status", "mean_reward", "pass_at_k", "cons_at_k", "tokens")
Stage = Literal["base", "warm_start", "rl"]


def stage_of(config: TrainConfig, done: int) -> Stage:
    """The stage of the eval after ``done`` RL steps (the warm start, if any, done)."""
    if done:
        return "rl"
    return "warm_start" if config.warmup_steps else "base"


def base_eval_due(config: TrainConfig) -> bool:
    """Whether the base model is evaluated before the warm start (runs with both)."""
    return bool(config.eval_every and config.warmup_steps)


def due(config: TrainConfig, done: int) -> bool:
    """Whether the weights after ``done`` steps are evaluated: before the first step, every
    ``eval_every`` steps, and after the last."""
    if not config.eval_every:
        return False
    return done == 0 or done % config.eval_every == 0 or done == config.steps


async def held_out_eval(
    config: TrainConfig,
    plan: Plan,
    renderer: Renderer,
    client: Any,
    engine: ScoringEngine,
    done: int,
    stage: Stage,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metrics row of an eval of the weights after ``done`` steps, and its samples.

    Its ``step`` is the last step trained on: -1 before the first RL step, and before the
    warm start one less than the warm start's first row (``-warmup_steps - 1``)."""
    assert plan.eval_rewards is not None  # preflight builds them with eval_every
    begin = time.perf_counter()
    eval_plan = EvalPlan(plan.eval_tasks, plan.eval_rewards, config.eval_n)
    settings = SamplingSettings(
        config.max_tokens, config.temperature, 1.0, config.seed, config.max_context
    )
    sampler = Sampler(client, renderer, plan.env, settings)
    rows: list[dict[str, Any]] = []
    await run_missing(eval_plan, sampler, engine, set(), rows.append)
    ids = [task.id for task in plan.eval_tasks]
    overall = summarise(rows, ids, config.eval_k, config.eval_threshold)["overall"]
    step = -config.warmup_steps - 1 if stage == "base" and config.warmup_steps else done - 1
    row = {
        "step": step,
        "phase": "eval",
        "stage": stage,
        "trained_steps": done,
        "eval": {key: overall[key] for key in FIGURES},
        "time": {"eval": time.perf_counter() - begin},
    }
    return row, [{"step": step, **sample} for sample in rows]


def eval_line(row: dict[str, Any]) -> str:
    figures = row["eval"]
    reward = figures["mean_reward"]
    passes = "  ".join(f"pass@{k} {v['mean']:.3f}" for k, v in figures["pass_at_k"].items())
    when = {
        "base": "of the base model",
        "warm_start": "after the warm start",
    }.get(row.get("stage", "rl"), f"after {row['trained_steps']} steps")
    return (
        f"held-out eval {when}: mean reward {_with_interval(reward)}  {passes}  "
        f"({figures['samples']} samples, {row['time']['eval']:.1f}s)"
    )


def _with_interval(figure: dict[str, Any] | None) -> str:
    """``0.812 [0.790, 0.834]``: a mean with its 95% interval, where there is one."""
    if figure is None or figure.get("mean") is None:
        return "-"
    if figure.get("low") is None or figure.get("high") is None:
        return f"{figure['mean']:.3f}"
    return f"{figure['mean']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"
