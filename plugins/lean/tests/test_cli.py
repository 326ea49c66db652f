"""`rlv verify --verifier lean` and `rlv lean doctor` as subprocesses, without Lean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lean_helpers import FAKE_REPL, STATEMENT, lean, task

CLI = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]


def no_lean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RLV_LEAN_PROJECT", "RLV_LEAN_REPL")}
    env["PATH"] = str(Path(sys.executable).parent) + ":/usr/bin:/bin"
    env["ELAN_HOME"] = str(tmp_path / "no-elan")
    return env


def run_verify(tmp_path: Path, completions: list[str], *config: str) -> list[dict[str, Any]]:
    t = task()
    (tmp_path / "tasks.jsonl").write_text(t.model_dump_json() + "\n")
    (tmp_path / "completions.jsonl").write_text(
        "".join(json.dumps({"task_id": t.id, "completion": c}) + "\n" for c in completions)
    )
    out = tmp_path / "scores.jsonl"
    args = [
        "verify",
        "--verifier",
        "lean",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--completions",
        str(tmp_path / "completions.jsonl"),
        "--out",
        str(out),
    ]
    for pair in config:
        args += ["--config", pair]
    done = subprocess.run(
        CLI + args, capture_output=True, text=True, timeout=60, env=no_lean_env(tmp_path)
    )
    assert out.exists(), done.stderr
    scores = [json.loads(line) for line in out.read_text().splitlines()]
    return sorted(scores, key=lambda s: int(s["sample_index"]))


def test_verify_without_lean(tmp_path: Path) -> None:
    scores = run_verify(
        tmp_path,
        [lean("by simp"), lean("by native_decide"), lean(f"axiom c : False\n{STATEMENT} := c")],
    )
    valid, native, axiom = scores
    assert valid["status"] == "error"
    assert "elan" in str(valid["error"]) and "rlv lean doctor" in str(valid["error"])
    assert (native["status"], native["reward"]) == ("ok", 0.0)
    assert native["info"]["reason"] == "banned:native_decide"
    assert axiom["info"]["reason"] == "banned:axiom"


def test_verify_with_fake_repl(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, FAKE_REPL])
    scores = run_verify(
        tmp_path, [lean("by simp"), lean("by exact bogus")], f"repl_command={command}"
    )
    assert [(s["status"], s["reward"]) for s in scores] == [("ok", 1.0), ("ok", 0.0)]


def test_doctor_says_what_to_install(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "lean", "doctor"],
        capture_output=True,
        text=True,
        timeout=60,
        env=no_lean_env(tmp_path),
    )
    assert "NOT READY" in done.stdout
    assert done.returncode == 1, "a doctor that finds Lean unusable must fail"
    assert "elan-init.sh" in done.stdout and "lake" in done.stdout
    assert "repl" in done.stdout and "mathlib" in done.stdout.lower()
    done = subprocess.run(
        [*CLI, "lean", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=no_lean_env(tmp_path),
    )
    report = json.loads(done.stdout)
    assert report["ok"] is False and {c["name"] for c in report["checks"]} >= {"lean", "repl"}


def test_doctor_smoke_tests_the_repl_as_the_verifier_starts_it() -> None:
    from rl_verifier_lean.config import LeanConfig
    from rl_verifier_lean.doctor import format_report, run_doctor
    from rl_verifier_lean.isolation import sandbox_reason

    report = run_doctor(LeanConfig(repl_command=["python", FAKE_REPL]))
    checks = {c["name"]: c for c in report["checks"]}
    isolation = sandbox_reason("auto")[0]
    assert checks["smoke"]["ok"] and f"({isolation})" in checks["smoke"]["detail"]
    assert report["ok"] and format_report(report).endswith("ready")
    broken = run_doctor(LeanConfig(repl_command=["python", FAKE_REPL + ".missing"]))
    smoke = {c["name"]: c for c in broken["checks"]}["smoke"]
    assert not broken["ok"] and not smoke["ok"] and "died" in smoke["detail"]
