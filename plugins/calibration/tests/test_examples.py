"""The example data in examples/calibration: up to date with its script, and all judged."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from types import ModuleType

import pytest

from rl_verifier import Status
from rl_verifier.testing import read_samples as load_samples
from rl_verifier.testing import read_tasks as load_tasks
from rl_verifier.testing import score_once
from rl_verifier_calibration.verifier import CalibrationVerifier

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "calibration"
pytestmark = pytest.mark.skipif(not EXAMPLE.is_dir(), reason="example data not present")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_example", EXAMPLE / "make_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_jsonl(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_files_match_the_generator() -> None:
    make = generator()
    rng = random.Random(make.SEED)
    tasks = make.make_tasks(rng)
    completions = make.make_completions(rng, tasks)
    assert read_jsonl(EXAMPLE / "tasks.jsonl") == [task for task, _ in tasks]
    assert read_jsonl(EXAMPLE / "completions.jsonl") == completions


def test_every_example_is_judged() -> None:
    tasks = load_tasks(EXAMPLE / "tasks.jsonl")
    samples = load_samples(tasks, EXAMPLE / "completions.jsonl")
    assert len(tasks) == 60
    assert sum("resolved_to" in t.reference for t in tasks.values()) >= 3
    assert sum(isinstance(s.completion.completion, list) for s in samples) >= 2
    verifier = CalibrationVerifier()
    scores = score_once(verifier, [(s.task, s.completion.completion) for s in samples])
    statuses = [s.status for s in scores]
    assert set(statuses) == {Status.OK, Status.INVALID}
    assert statuses.count(Status.INVALID) < 0.15 * len(statuses)
    metrics = verifier.batch_metrics(scores)
    assert metrics["brier_skill"] > 0.2  # the forecaster is informed
