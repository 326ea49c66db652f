"""`rlv lean doctor`: what Lean tooling is present, and what to install when it is not."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.isolation import choose_sandbox, sandbox_reason
from rl_verifier_lean.locate import (
    INSTALL_ELAN,
    REPL_VAR,
    LeanLaunch,
    LeanMissing,
    file_launch,
    repl_command,
    repl_launch,
    replay_argv,
    which,
)
from rl_verifier_lean.repl import Repl, ReplDied

SMOKE = "theorem rlv_doctor : True := trivial\n\n#print axioms rlv_doctor"


def version(argv: list[str], cwd: str | None = None) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"failed: {exc}"
    return (
        (done.stdout or done.stderr).strip().splitlines()[0] if done.stdout or done.stderr else ""
    )


def mathlib_in(project: str) -> bool:
    manifest = Path(project) / "lake-manifest.json"
    return manifest.is_file() and '"mathlib"' in manifest.read_text(errors="replace")


def run_doctor(config: LeanConfig) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str, fix: str = "") -> None:
        checks.append({"name": name, "ok": ok, "detail": detail, "fix": "" if ok else fix})

    isolation, why = sandbox_reason(config.sandbox)
    try:
        command = repl_command(config)
        launch: LeanLaunch | LeanMissing = repl_launch(config, sandboxed=isolation != "none")
    except LeanMissing as exc:
        command, launch = None, exc
    elan, lean, lake = which("elan"), which("lean"), which("lake")
    add("elan", bool(elan), elan or "not found", f"install elan: {INSTALL_ELAN}")
    about = launch.about if isinstance(launch, LeanLaunch) else ""
    add(
        "lean",
        bool(lean or about),
        about or (version([lean, "--version"]) if lean else "not found"),
        "install a toolchain: `elan default leanprover/lean4:stable` (or let a project's "
        "lean-toolchain pick one)",
    )
    add(
        "lake",
        bool(lake),
        version([lake, "--version"]) if lake else "not found",
        "lake comes with the Lean toolchain (install elan)",
    )
    project = config.project_dir()
    if project:
        exists = Path(project).is_dir()
        add(
            "project",
            exists,
            project,
            "create it: `lake new leanproj math` and point "
            "RLV_LEAN_PROJECT (or config `project`) at it",
        )
        add(
            "mathlib",
            exists and mathlib_in(project),
            "in lake-manifest.json" if exists and mathlib_in(project) else "not in the project",
            'add `require mathlib from git "https://github.com/leanprover-community/mathlib4"` '
            "to the lakefile, then `lake update && lake exe cache get`",
        )
    else:
        add(
            "project",
            False,
            "RLV_LEAN_PROJECT / config `project` not set",
            "set RLV_LEAN_PROJECT to a Lake project with Mathlib and the REPL",
        )
        add(
            "mathlib",
            False,
            "unknown (no project)",
            "`lake +leanprover-community/mathlib4:lean-toolchain new leanproj math && "
            "cd leanproj && lake exe cache get`",
        )
    add(
        "sandbox",
        isolation != "none" or config.sandbox == "none",
        f"{isolation}: {why}",
        "install bubblewrap (`apt-get install bubblewrap`) so Lean runs isolated, "
        "or set sandbox='none' to run it unsandboxed",
    )
    needed = ["lean", "lake", "repl"] if not command else ["repl"]
    if config.sandbox not in ("auto", "none"):  # a sandbox named in the config is required
        needed.append("sandbox")
    if isinstance(launch, LeanMissing):
        add("repl", False, "not found", str(launch))
    else:
        where = f" (in {launch.cwd})" if launch.cwd else ""
        if command and not config.repl_command:
            where += f" (from {REPL_VAR})"
        add("repl", True, " ".join(launch.argv) + where)
        ok, detail = smoke_test(config, launch)
        add("smoke", ok, detail, "see the error above; `rlv lean doctor --json` has the details")
        needed.append("smoke")
    try:
        checker = " ".join(replay_argv(config, file_launch(config)))
    except LeanMissing as exc:
        detail = "no kernel-replay checker (backend 'file' replays answers by default)"
        add("replay", False, detail, str(exc))
    else:
        add("replay", True, checker)
    if config.backend == "file" and config.replay_on:
        needed.append("replay")
    return {"ok": all(c["ok"] for c in checks if c["name"] in needed), "checks": checks}


def smoke_test(config: LeanConfig, launch: LeanLaunch) -> tuple[bool, str]:
    """Start the REPL as the verifier would and check a one-line theorem."""

    async def go() -> tuple[bool, str]:
        start = time.perf_counter()
        repl = await Repl.start(launch, choose_sandbox(config.sandbox), config.memory_mb)
        try:
            answer = await asyncio.wait_for(repl.send({"cmd": SMOKE}), config.header_timeout_s)
        finally:
            await repl.close()
        took = time.perf_counter() - start
        if "does not depend on any axioms" in json.dumps(answer):
            return True, f"checked a theorem in {took:.1f} s ({repl.isolation})"
        return False, f"unexpected answer: {json.dumps(answer)[:300]}"

    try:
        return asyncio.run(go())
    except (OSError, RuntimeError, TimeoutError, ReplDied) as exc:
        return False, f"{type(exc).__name__}: {exc}"


def format_report(report: dict[str, Any]) -> str:
    lines = []
    for check in report["checks"]:
        mark = "ok" if check["ok"] else "no"
        lines.append(f"  {mark}  {check['name']:<8} {check['detail']}")
        if check["fix"]:
            lines.append(f"        fix: {check['fix']}")
    lines.append("ready" if report["ok"] else "NOT READY: Lean samples will be scored 'error'")
    return "\n".join(lines)
