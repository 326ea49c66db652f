"""Run the tool recipe (examples/tools) end to end and print its learning curve's ends.

Runs ``rlv train examples/tools/tools.toml`` (warm start on scripted episodes, then RL on
the ``tool_calls`` reward with the ``search_tools`` environment and the built-in tiny model),
then prints, for the first and last few RL steps, the mean reward, citation validity,
fabricated-citation share, tool calls per episode, thrift and legality from its
``metrics.jsonl``, with the wall time of the run (kept in runs/tools-bench-TIME).
``--run-dir`` only reads an existing run.

Run: .venv/bin/python benchmarks/tool_recipe.py [--window 5] [--run-dir RUN_DIR]
     [--set key=value ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import fmean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "tools" / "tools.toml"
FIGURES = {  # label -> how to read it from a metrics row
    "reward": lambda m: m["reward_mean"],
    "citation validity": lambda m: m["components"].get("citation_validity"),
    "fabricated share": lambda m: m["components"].get("fabricated_share"),
    "tool calls / episode": lambda m: m["tool_calls_mean"],
    "thrift": lambda m: m["components"].get("thrift"),
    "legality": lambda m: m["components"].get("legality"),
}


def train(run_dir: Path, overrides: list[str]) -> float:
    """Run the recipe into ``run_dir``; its wall time in seconds."""
    sets = [f"run_dir={run_dir}", *overrides]
    argv = [sys.executable, "-m", "rl_verifier", "train", str(CONFIG)]
    begin = time.perf_counter()
    subprocess.run([*argv, *(a for s in sets for a in ("--set", s))], check=True)
    return time.perf_counter() - begin


def mean(rows: list[dict[str, Any]], read: Any) -> float | None:
    values = [read(m) for m in rows]
    values = [v for v in values if v is not None]
    return fmean(values) if values else None


def report(run_dir: Path, window: int, wall_s: float | None) -> None:
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rl = [m for m in metrics if m.get("phase") == "rl"]
    warmup = [m for m in metrics if m.get("phase") == "warmup"]
    first, last = rl[:window], rl[-window:]
    print(f"run: {run_dir}")
    print(f"{len(warmup)} warm-up steps, {len(rl)} RL steps; figures: mean of RL steps")
    print(f"{'':22} {f'first {len(first)}':>10} {f'last {len(last)}':>10}")
    for label, read in FIGURES.items():
        a, b = mean(first, read), mean(last, read)
        shown = [f"{v:10.3f}" if v is not None else f"{'-':>10}" for v in (a, b)]
        print(f"{label:22} {shown[0]} {shown[1]}")
    seconds = [m["time"]["total"] for m in rl] + [m["time"]["training"] for m in warmup]
    print(f"time in steps: {sum(seconds):.0f} s", end="")
    print(f"; wall time of the run: {wall_s:.0f} s" if wall_s is not None else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=5, help="RL steps averaged at each end")
    parser.add_argument("--run-dir", type=Path, help="read this finished run instead")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    if args.run_dir is not None:
        report(args.run_dir, args.window, None)
        return
    run_dir = ROOT / "runs" / time.strftime("tools-bench-%Y%m%d-%H%M%S")
    wall_s = train(run_dir, args.overrides)
    report(run_dir, args.window, wall_s)


if __name__ == "__main__":
    main()
