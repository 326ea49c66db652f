"""`rlv verify --verifier calibration` on held-out data agrees with scikit-learn."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import brier_score_loss, log_loss

FORMATS = [
    "<probability>{p}</probability>",
    "After weighing the evidence.\nProbability: {p}",
    "I'd put it at {pct}%.",
    "My forecast is {p}.",
]


def held_out(tmp_path: Path, n: int = 300, seed: int = 20261129) -> tuple[Path, Path, list, list]:
    rng = random.Random(seed)
    tasks, completions, probabilities, outcomes = [], [], [], []
    for i in range(n):
        truth = rng.random()
        outcome = int(rng.random() < truth)
        written = f"{min(max(truth + rng.gauss(0, 0.1), 0.001), 0.999):.4f}"
        pct = f"{float(written) * 100:.2f}"
        text = rng.choice(FORMATS).format(p=written, pct=pct)
        tasks.append(
            {"id": f"q{i}", "prompt": "Will it happen?", "reference": {"outcome": outcome}}
        )
        completions.append({"task_id": f"q{i}", "completion": text})
        probabilities.append(float(written))
        outcomes.append(outcome)
    task_file, completion_file = tmp_path / "tasks.jsonl", tmp_path / "completions.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    completion_file.write_text("".join(json.dumps(c) + "\n" for c in completions))
    return task_file, completion_file, probabilities, outcomes


def verify(tmp_path: Path, tasks: Path, completions: Path, rule: str) -> tuple[dict, list[dict]]:
    out, summary = tmp_path / f"{rule}.jsonl", tmp_path / f"{rule}.summary.json"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from rl_verifier.cli.app import main; main()",
            "verify",
            "--verifier",
            "calibration",
            "--config",
            f"rule={rule}",
            "--tasks",
            str(tasks),
            "--completions",
            str(completions),
            "--out",
            str(out),
            "--summary-json",
            str(summary),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = sorted(
        map(json.loads, out.read_text().splitlines()), key=lambda r: int(r["task_id"][1:])
    )
    return json.loads(summary.read_text()), rows


@pytest.mark.parametrize("rule", ["brier", "log", "spherical"])
def test_batch_metrics_and_rewards_match_references(tmp_path: Path, rule: str) -> None:
    tasks, completions, probabilities, outcomes = held_out(tmp_path)
    summary, rows = verify(tmp_path, tasks, completions, rule)
    assert summary["status"] == {"ok": 300, "invalid": 0, "timeout": 0, "error": 0}
    metrics = summary["metrics"]
    assert metrics["brier"] == pytest.approx(brier_score_loss(outcomes, probabilities), abs=1e-9)
    assert metrics["log_loss"] == pytest.approx(log_loss(outcomes, probabilities), abs=1e-9)
    for row, p, y in zip(rows, probabilities, outcomes, strict=True):
        q = p if y == 1 else 1 - p
        expected = {
            "brier": 1 - (p - y) ** 2,
            "log": 1 + math.log2(max(q, 0.01)),
            "spherical": q / math.sqrt(p**2 + (1 - p) ** 2),
        }[rule]
        assert row["reward"] == pytest.approx(expected, abs=1e-9), row
