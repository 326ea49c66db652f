"""A recipe's held-out figures: the base model, after the warm start, after RL, with 95%
intervals and paired differences, beside the recipe's trivial baseline.

Runs ``rlv train CONFIG`` (its own ``eval_every``/``eval_tasks``, or those given with
``--set``) and prints, from its ``metrics.jsonl`` and ``eval_samples.jsonl``: every held-out
eval by stage (``base``: before any training; ``warm_start``: after the warm start, before
RL; then after RL steps), the paired differences task by task (the warm start's effect,
RL's effect and the whole run's), the verifier's batch metrics over each eval's samples
(Brier and ECE for ``calibration``), with ``--by KEY`` the mean reward (and with
``--field NAME`` the mean of the scores' ``info[NAME]``) per value of the tasks'
``metadata[KEY]``, the config's trivial baseline, the share of held-out samples that were
``timeout``/``error``, the training reward of the first and last steps, the wall time and
the load average. The run is kept in runs/NAME-bench-TIME; ``--run-dir`` only reads an
existing run.

Run: .venv/bin/python benchmarks/recipe_held_out.py examples/calibration/calibration.toml
     [--set key=value ...] [--run-dir RUN_DIR] [--by rate --field probability]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any

from rl_verifier import Score, reward_for
from rl_verifier.train import load_tasks
from rl_verifier.train.gains import JUDGED, eval_label, gain_lines

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


def report(
    run_dir: Path, wall_s: float | None, window: int, by: str | None, field: str | None
) -> None:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    config = json.loads((run_dir / "config.json").read_text())
    rl = [m for m in rows if m.get("phase") == "rl"]
    evals = [m for m in rows if m.get("phase") == "eval"]
    samples = read_samples(run_dir / "eval_samples.jsonl")
    print(f"run: {run_dir}  model: {config.get('base_model')}")
    warm = (
        f"{config.get('warmup_steps')} warm-up steps, then " if config.get("warmup_steps") else ""
    )
    print(
        f"{warm}{len(rl)} RL steps of {config.get('groups_per_step')} x {config.get('group_size')}"
    )
    print(
        f"{'held-out eval':<28} {'mean reward (95% CI)':>28} {'pass@1 (95% CI)':>28}  timeout/error"
    )
    for row in evals:
        figures = row["eval"]
        pass1 = figures.get("pass_at_k", {}).get("1")
        status = figures.get("status", {})
        failed = status.get("timeout", 0) + status.get("error", 0)
        share = f"{failed}/{figures['samples']}"
        reward = interval(figures["mean_reward"])
        print(f"{eval_label(row):<28} {reward:>28} {interval(pass1):>28}  {share}")
    if evals:
        print(f"({evals[-1]['eval']['tasks']} held-out tasks x {config.get('eval_n')} samples)")
        for line in gain_lines(samples, evals, config):
            print(line)
        for line in batch_metrics(samples, evals, config):
            print(line)
        if by:
            for line in buckets(samples, evals, config, by, field):
                print(line)
    if config.get("baseline_reward") is not None and not evals:
        print(f"trivial baseline ({config.get('baseline_label')}): {config['baseline_reward']:.3f}")
    rewards = [m["reward_mean"] for m in rl if m.get("reward_mean") is not None]
    if rewards:
        first, last = fmean(rewards[:window]), fmean(rewards[-window:])
        print(f"training reward, first {window} steps {first:.3f}, last {window} {last:.3f}")
    in_steps = sum(m.get("time", {}).get("total", 0) for m in rl)
    in_steps += sum(
        m.get("time", {}).get("training", 0) for m in rows if m.get("phase") == "warmup"
    )
    in_steps += sum(m["time"]["eval"] for m in evals)
    print(f"time in warm-up, steps and evals: {in_steps:.0f} s", end="")
    print(f"; wall time of the run: {wall_s:.0f} s" if wall_s is not None else "")
    print(f"load average now (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


def read_samples(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def batch_metrics(
    samples: list[dict[str, Any]], evals: list[dict[str, Any]], config: dict[str, Any]
) -> list[str]:
    """The verifier's own batch figures (e.g. Brier, ECE) over each eval's samples, for a
    run whose ``reward`` names one verifier."""
    spec = config.get("reward") or ""
    if not spec:
        return []
    reward = reward_for(spec, config.get("verifier_config") or {})
    if len(reward.verifiers) != 1:
        return []
    verifier = next(iter(reward.verifiers.values()))
    lines = []
    for row in evals:
        scores = [Score.model_validate(s["score"]) for s in samples if s["step"] == row["step"]]
        figures = verifier.batch_metrics(scores)
        shown = ", ".join(f"{k} {v:.3f}" for k, v in sorted(figures.items()) if k != "n")
        lines.append(f"{verifier.name} batch metrics, {eval_label(row)}: {shown}")
    return lines


def buckets(
    samples: list[dict[str, Any]],
    evals: list[dict[str, Any]],
    config: dict[str, Any],
    key: str,
    field: str | None,
) -> list[str]:
    """Mean reward (and mean ``info[field]``) per value of the tasks' ``metadata[key]``."""
    tasks = {t.id: t for t in load_tasks(config["eval_tasks"])}
    lines = [f"per {key}" + (f" (mean reward; mean {field})" if field else " (mean reward)")]
    for row in evals:
        rewards: dict[str, list[float]] = defaultdict(list)
        values: dict[str, list[float]] = defaultdict(list)
        for sample in (s for s in samples if s["step"] == row["step"]):
            score = sample["score"]
            if score["status"] not in JUDGED:
                continue
            bucket = str(tasks[sample["task_id"]].metadata.get(key))
            rewards[bucket].append(float(score["reward"]))
            value = score.get("info", {}).get(field) if field else None
            if isinstance(value, int | float):
                values[bucket].append(float(value))
        cells = []
        for bucket in sorted(rewards):
            cell = f"{key}={bucket}: {fmean(rewards[bucket]):.3f}"
            if field and values[bucket]:
                cell += f"; {field} {fmean(values[bucket]):.3f} (n {len(values[bucket])})"
            cells.append(cell)
        lines.append(f"  {eval_label(row):<26} " + "  |  ".join(cells))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, nargs="?", help="a recipe's TOML")
    parser.add_argument("--run-dir", type=Path, help="read this finished run instead")
    parser.add_argument("--window", type=int, default=3, help="steps averaged at each end")
    parser.add_argument("--by", help="break held-out figures down by this task metadata key")
    parser.add_argument("--field", help="with --by: also the mean of this score info field")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    if args.run_dir is not None:
        report(args.run_dir, None, args.window, args.by, args.field)
        return
    if args.config is None:
        parser.error("give a recipe's TOML, or --run-dir")
    name = args.config.stem
    run_dir = ROOT / "runs" / time.strftime(f"{name}-bench-%Y%m%d-%H%M%S")
    named = [o.split("=", 1)[1] for o in args.overrides if o.startswith("run_dir=")]
    if named:  # a --set run_dir=... is where the run goes (a later --set wins in rlv train)
        run_dir = Path(named[-1]).resolve()
    others = [o for o in args.overrides if not o.startswith("run_dir=")]
    wall_s = train(args.config, run_dir, others)
    report(run_dir, wall_s, args.window, args.by, args.field)


if __name__ == "__main__":
    main()
