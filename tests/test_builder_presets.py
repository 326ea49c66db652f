"""The loop file the builder page downloads for each preset runs two local steps.

The Lean preset is left out where no Lean toolchain is installed: every proof would be
scored `error` and the run would (rightly) stop on its failure threshold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from rl_verifier.web.app import available_presets, create_app

NEEDS = {"lean": ("lean-repl",), "pytest": ("bwrap",)}  # commands each preset's verifier runs
PRESETS = [
    pytest.param(
        p,
        id=p["values"]["verifier"],
        marks=pytest.mark.requires(*NEEDS.get(p["values"]["verifier"], ())),
    )
    for p in available_presets()
]


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_downloaded_preset_loop_runs_two_local_steps(preset: dict, tmp_path: Path) -> None:
    form = {
        **{k: v for k, v in preset["values"].items() if v is not None},
        "model": "rlv/tiny-chat",
        "steps": 2,
        "rank": 4,
        "group_size": 2,
        "groups_per_step": 2,
    }
    client = TestClient(create_app())
    files = {}
    for kind in ("script", "config"):
        answer = client.post(f"/api/download?kind={kind}", json=form)
        assert answer.status_code == 200, answer.text
        name = answer.headers["content-disposition"].split("filename=")[1].strip('"')
        (tmp_path / name).write_bytes(answer.content)
        files[kind] = tmp_path / name
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            str(files["script"]),
            "--set",
            "max_tokens=16",
            "--set",
            f"run_dir={run_dir}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    steps = [
        json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert [s for s in steps if s >= 0] == [0, 1]
