"""Find the Lean toolchain and the REPL, and say what to install when they are missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rl_verifier_lean.config import LeanConfig

INSTALL_ELAN = (
    "curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf "
    "| sh -s -- -y --default-toolchain none"
)
INSTALL_HINT = (
    f"Lean is not set up for the 'lean' verifier. Install elan ({INSTALL_ELAN}), then make a Lake "
    "project with Mathlib and the REPL: `lake +leanprover-community/mathlib4:lean-toolchain "
    "new leanproj math && cd leanproj && lake exe cache get`, add "
    '`require REPL from git "https://github.com/leanprover-community/repl"` to its '
    "lakefile and run `lake build repl` (or build leanprover-community/repl at the same "
    "toolchain and put its `repl` binary on PATH), then set RLV_LEAN_PROJECT=/path/to/leanproj "
    "or config `project`. Check with `rlv lean doctor`."
)


class LeanMissing(RuntimeError):
    """No way to run Lean here; the message says what to install."""


def elan_bin() -> Path:
    return Path(os.environ.get("ELAN_HOME", Path.home() / ".elan")) / "bin"


def which(tool: str) -> str | None:
    found = shutil.which(tool)
    if found:
        return found
    candidate = elan_bin() / tool
    return str(candidate) if candidate.exists() else None


def repl_command(config: LeanConfig) -> tuple[list[str], str | None]:
    """argv and cwd that start the REPL, or ``LeanMissing``."""
    project = config.project_dir()
    if config.repl_command:
        return list(config.repl_command), project
    if project:
        lake = which("lake")
        if lake and Path(project).is_dir():
            return [lake, "exe", "repl"], project
        raise LeanMissing(
            f"project {project!r} set but lake or the directory is missing. " + INSTALL_HINT
        )
    if repl := which("repl"):
        return [repl], None
    raise LeanMissing(INSTALL_HINT)


def lake_command(config: LeanConfig) -> tuple[list[str], str]:
    """argv prefix and cwd for the per-file backend (`lake env lean --json FILE`)."""
    lake, project = which("lake"), config.project_dir()
    if not lake or not project:
        raise LeanMissing(INSTALL_HINT)
    return [lake, "env", "lean", "--json"], project
