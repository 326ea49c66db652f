"""A recipe's held-out figures: base model vs trained policy, with 95% intervals.

Runs ``rlv train CONFIG`` (its own ``eval_every``/``eval_tasks``, or the ones given with
``--set``) and prints, from its ``metrics.jsonl``, every held-out eval (the one before the
first step is the base model's), the config's trivial baseline where it names one, the
mean training reward of the first and last steps, and the wall time. The run is kept in
runs/NAME-bench-TIME; ``--run-dir`` only reads an existing run.

Run: .venv/bin/python benchmarks/recipe_held_out.py examples/arithmetic/arithmetic.toml
     [--set key=value ...] [--run-dir RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import fmean
from typing import Any

from rl_verifier.evaluation.estimators import mean_interval

ROOT = Path(__file__).resolve().parents[1]


def train(config: Path, run_dir: Path, overrides: list[str]) -> float:
    """Run the recipe into ``run_dir``; its wall time in seconds."""
    sets = [f"run_dir={run_dir}", *overrides]
    argv = [sys.executable, "-m", "rl_verifier", "train", str(config)]
    begin = time.perf_counter()
    subprocess.run([*argv, *(a for s in sets for a in ("--set", s))], check=True)
    return time.perf_counter() - begin


def interval(figure: dict[str, Any] | None) -> str:
    if not figure or figure.get("mean") is None:
        return "-"
    if figure.get("low") is None:
        return f"{figure['mean']:.3f}"
    return f"{figure['mean']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"


def report(run_dir: Path, wall_s: float | None, window: int) -> None:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    config = json.loads((run_dir / "config.json").read_text())
    rl = [m for m in rows if m.get("phase") == "rl"]
    evals = [m for m in rows if m.get("phase") == "eval"]
    print(f"run: {run_dir}  model: {config.get('base_model')}")
    print(f"{len(rl)} RL steps of {config.get('groups_per_step')} x {config.get('group_size')}")
    print(f"{'held-out eval':<28} {'mean reward (95% CI)':>28} {'pass@1 (95% CI)':>28}")
    for row in evals:
        figures = row["eval"]
        label = "base model" if row["trained_steps"] == 0 else f"after {row['trained_steps']} steps"
        pass1 = figures.get("pass_at_k", {}).get("1")
        print(f"{label:<28} {interval(figures['mean_reward']):>28} {interval(pass1):>28}")
    if evals:
        print(f"({evals[-1]['eval']['tasks']} held-out tasks x {config.get('eval_n')} samples)")
        print(paired_difference(run_dir / "eval_samples.jsonl"))
    if config.get("baseline_reward") is not None:
        print(f"trivial baseline ({config.get('baseline_label')}): {config['baseline_reward']:.3f}")
    rewards = [m["reward_mean"] for m in rl if m.get("reward_mean") is not None]
    if rewards:
        first, last = fmean(rewards[:window]), fmean(rewards[-window:])
        print(f"training reward, first {window} steps {first:.3f}, last {window} {last:.3f}")
    in_steps = sum(m["time"]["total"] for m in rl) + sum(m["time"]["eval"] for m in evals)
    print(f"time in steps and evals: {in_steps:.0f} s", end="")
    print(f"; wall time of the run: {wall_s:.0f} s" if wall_s is not None else "")
    print(f"load average now (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


def task_means(rows: list[dict[str, Any]], step: int) -> dict[str, float]:
    """Each task's mean reward at the eval of ``step`` (timeouts and errors left out)."""
    rewards: dict[str, list[float]] = {}
    for row in rows:
        score = row["score"]
        if row["step"] == step and score["status"] in ("ok", "invalid"):
            rewards.setdefault(row["task_id"], []).append(float(score["reward"]))
    return {task: fmean(values) for task, values in rewards.items()}


def paired_difference(path: Path) -> str:
    """Last eval minus the first, task by task (the same tasks and sampling seeds)."""
    if not path.exists():
        return "paired difference: no eval_samples.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    steps = sorted({row["step"] for row in rows})
    if len(steps) < 2:
        return "paired difference: one held-out eval only"
    first, last = task_means(rows, steps[0]), task_means(rows, steps[-1])
    shared = sorted(set(first) & set(last))
    interval = mean_interval([last[t] - first[t] for t in shared])
    if interval is None or interval.low is None or interval.high is None:
        return "paired difference: too few shared tasks"
    verdict = "significant" if interval.low > 0 or interval.high < 0 else "not significant"
    return (
        f"paired difference, last eval - first over {len(shared)} tasks: {interval.mean:+.3f} "
        f"[{interval.low:+.3f}, {interval.high:+.3f}] ({verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, nargs="?", help="a recipe's TOML")
    parser.add_argument("--run-dir", type=Path, help="read this finished run instead")
    parser.add_argument("--window", type=int, default=3, help="steps averaged at each end")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    if args.run_dir is not None:
        report(args.run_dir, None, args.window)
        return
    if args.config is None:
        parser.error("give a recipe's TOML, or --run-dir")
    name = args.config.stem
    run_dir = ROOT / "runs" / time.strftime(f"{name}-bench-%Y%m%d-%H%M%S")
    wall_s = train(args.config, run_dir, args.overrides)
    report(run_dir, wall_s, args.window)


if __name__ == "__main__":
    main()
