"""Held-out evals during training: the current sampler on ``eval_tasks``, sampled, scored
and summarised by ``rl_verifier.evaluation`` as ``rlv eval`` does, logged as one
``phase = "eval"`` row of ``metrics.jsonl`` and its samples in ``eval_samples.jsonl``."""

from __future__ import annotations

import time
from typing import Any

from rl_verifier.engine import ScoringEngine
from rl_verifier.evaluation.runner import Plan as EvalPlan
from rl_verifier.evaluation.runner import run_missing
from rl_verifier.evaluation.sampling import Sampler, SamplingSettings
from rl_verifier.evaluation.summary import summarise
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.preflight import Plan
from rl_verifier.train.renderer import Renderer

FIGURES = ("tasks", "samples", "status", "mean_reward", "pass_at_k", "cons_at_k", "tokens")


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
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The metrics row of an eval of the weights after ``done`` steps, and its samples."""
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
    step = done - 1  # the last step trained on (-1: none)
    row = {
        "step": step,
        "phase": "eval",
        "trained_steps": done,
        "eval": {key: overall[key] for key in FIGURES},
        "time": {"eval": time.perf_counter() - begin},
    }
    return row, [{"step": step, **sample} for sample in rows]


def eval_line(row: dict[str, Any]) -> str:
    figures = row["eval"]
    reward = figures["mean_reward"]
    shown = "-" if reward is None else f"{reward['mean']:.3f}"
    passes = "  ".join(f"pass@{k} {v['mean']:.3f}" for k, v in figures["pass_at_k"].items())
    return (
        f"held-out eval after {row['trained_steps']} steps: mean reward {shown}  {passes}  "
        f"({figures['samples']} samples, {row['time']['eval']:.1f}s)"
    )
