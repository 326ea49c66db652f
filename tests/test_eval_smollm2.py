"""`rlv eval` of the pretrained SmolLM2-135M-Instruct on a bundled task set, sampled through
the Tinker SDK from `rlv serve` (kept small: SmolLM2 on 2 CPU cores costs about 0.4 s of CPU
a token here). The OpenAI-compatible sampler meets SmolLM2 in
tests/test_integrations_prime_verifiers.py (vf-eval against the server's /v1)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rl_verifier import Scorer, Task
from rl_verifier.evaluation.estimators import pass_at_k
from rl_verifier.testing import load_task_source
from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2

RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
MODEL = smollm2.SMOLLM2_NAME
TASKS = "taskset:exact_match-example:test"  # 5 sums, answer in <answer> tags


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    if not smollm2.is_available():
        pytest.fail(f"SmolLM2 is part of the test set-up: {smollm2.INSTALL_HINT}")
    smollm2.ensure_smollm2()
    data = tmp_path_factory.mktemp("serve")
    with LocalServer(data, preload=(MODEL,), log_path=data / "server.log") as running:
        yield running


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_eval(out: Path, *how: str) -> dict[str, Any]:
    args = ["eval", "--model", MODEL, "--tasks", TASKS, "--reward", "exact_match",
            "-n", "2", "-k", "1,2", "--max-tokens", "6", "--out", str(out), *how]  # fmt: skip
    done = subprocess.run([*RLV, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "huggingface.co" not in done.stderr  # the tokenizer comes from this machine
    assert f"model          {MODEL}" in done.stdout
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


@pytest.mark.slow
def test_smollm2_on_a_bundled_task_set(server: LocalServer, tmp_path: Path) -> None:
    summary = run_eval(tmp_path / "ev", "--base-url", server.url)
    tasks = load_task_source(TASKS)
    samples = rows(tmp_path / "ev" / "samples.jsonl")
    assert sorted((r["task_id"], r["sample_index"]) for r in samples) == sorted(
        (t, i) for t in tasks for i in range(2)
    )
    scorer = Scorer("exact_match", executor="inline")
    for row in samples:  # SmolLM2's own words, scored as exact_match scores them
        text = row["completion"][-1]["content"]
        assert text.strip() and 0 < row["tokens"] <= 6
        again = scorer.score(Task.model_validate(tasks[row["task_id"]]), text)
        assert (row["score"]["status"], row["score"]["reward"]) == (again.status, again.reward)
    for task in summary["per_task"]:
        mine = [r for r in samples if r["task_id"] == task["task_id"]]
        correct = sum(r["score"]["reward"] >= 1.0 for r in mine if r["score"]["status"] == "ok")
        assert task["pass_at_k"]["2"] == pytest.approx(pass_at_k(2, correct, 2))
    assert summary["overall"]["samples"] == 2 * len(tasks) == 10
    assert summary["settings"]["backend"] == "tinker"
