"""Wall time per training step, split into sampling, scoring and training, with sampling
allowed 0 and 1 steps ahead of training (local backend, built-in tiny model).

Scoring uses a verifier with a fixed cost per sample (--cost, default 10 ms), through
the process executor with 2 workers. Printed per mode:
mean seconds per step for each part, the trainer's wait for its batch, and the share of
scoring time not hidden behind sampling (scoring wall time left after the last group was
sampled, over the scoring time summed across groups). With sampling one step ahead the
trainer's wait shows how much of sampling plus scoring still sits on the critical path.

Run: .venv/bin/python benchmarks/train_overlap.py [--steps 8] [--cost 0.05]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from statistics import fmean

from bench_verifiers import CostlyFormat

from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.train import load_config, run


def measure(ahead: int, steps: int, cost: float, root: Path) -> dict[str, float]:
    run_dir = root / f"ahead-{ahead}"
    config = load_config(
        Path("examples/demo/demo.toml"),
        [
            f"steps={steps}",
            f"sampling_ahead={ahead}",
            "warmup_steps=10",
            f"run_dir={run_dir}",
            "workers=2",
            "save_every=1000",
        ],
    ).model_copy(update={"reward": "costly_format", "verifier_config": {"cost_s": cost}})
    run(config)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rl = [r for r in rows if r.get("phase") == "rl"][1:]  # the first step includes warm-up
    unhidden = sum(r["time"]["scoring"] for r in rl)
    busy = sum(r["scoring_busy_s"] for r in rl)
    return {
        "step": fmean(r["time"]["total"] for r in rl),
        "sampling": fmean(r["time"]["sampling"] for r in rl),
        "scoring_busy": busy / len(rl),
        "training": fmean(r["time"]["training"] for r in rl),
        "waiting": fmean(r["time"]["waiting_for_batch"] for r in rl),
        "unhidden_share": unhidden / busy if busy else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--cost", type=float, default=0.01)
    args = parser.parse_args()
    get_plugins().registry.add(CostlyFormat, "benchmark", "0")
    root = Path(tempfile.mkdtemp(prefix="rlv-overlap-"))
    results = {ahead: measure(ahead, args.steps, args.cost, root) for ahead in (0, 1)}
    print(
        f"per step, seconds (mean of {args.steps - 1} steps; scoring {args.cost * 1000:.0f} ms"
        " a sample, 128 samples a step, 2 workers)"
    )
    print(f"{'':<36} {'ahead=0':>10} {'ahead=1':>10}")
    labels = {
        "step": "wall time per step",
        "sampling": "sampling (wall)",
        "scoring_busy": "scoring (summed over groups)",
        "training": "training (fwd_bwd + optim)",
        "waiting": "trainer waiting for its batch",
    }
    for key, label in labels.items():
        print(f"{label:<36} {results[0][key]:>10.3f} {results[1][key]:>10.3f}")
    print(
        f"{'scoring not hidden behind sampling':<36} {results[0]['unhidden_share']:>10.1%} "
        f"{results[1]['unhidden_share']:>10.1%}"
    )
    speedup = results[0]["step"] / results[1]["step"]
    print(f"ahead=1 step time vs on-policy: {speedup:.2f}x faster")


if __name__ == "__main__":
    main()
