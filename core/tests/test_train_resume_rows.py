"""`rlv train --resume` reads back the run's own logs to decide where to start: a hand-edited
checkpoint row stops it in one line naming the file and line, before any log is rewound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rlv_cli_helpers import assert_user_error, rlv, write_jsonl

from rl_verifier.train.config import TrainConfig


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([{"step": 1, "path": "tinker://r/1", "kind": "state"},
          {"step": "2", "path": "tinker://r/2", "kind": "state"}], 2, "step '2' is not a step"),
        ([{"step": 2, "kind": "state"}], 1, "not a saved state this run wrote"),
        ([{"step": -1, "path": "tinker://r/0", "kind": "state"}], 1, "not a saved state"),
        ([{"step": True, "path": "tinker://r/1", "kind": "state"}], 1, "not a step number"),
    ],
)  # fmt: skip
def test_a_bad_checkpoint_row_stops_resume_before_anything(
    tmp_path: Path, rows: list[dict[str, object]], line: int, message: str
) -> None:
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [{"id": "a", "prompt": "p"}])
    run = tmp_path / "run"
    run.mkdir()
    config = TrainConfig(tasks=str(tasks), steps=3).model_dump(mode="json")
    (run / "config.json").write_text(json.dumps(config))
    checkpoints = write_jsonl(run / "checkpoints.jsonl", rows)
    metrics = write_jsonl(run / "metrics.jsonl", [{"step": s} for s in range(3)])
    before = metrics.read_text()
    result = rlv("train", "--resume", str(run))
    assert_user_error(result, f"{checkpoints}:{line}: ", message)
    assert metrics.read_text() == before  # nothing rewound
