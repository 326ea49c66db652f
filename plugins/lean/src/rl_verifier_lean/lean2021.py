"""The Lean 4 of June 2021 behind a REPL front: a folder holding the front (``repl``), its
``repl_shim.py`` and the toolchain archive ``lean4-2021.tar.zst`` (rl-verifier's repository
keeps one at ``../shared/lean4-2021``). The front unpacks the archive into ``$LEAN2021_HOME``
(default ``~/.cache/lean4-2021``) on first use. Here that is done on the host, before Lean
is sandboxed, and the sandbox shows the folder and the unpacked toolchain read-only.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

FRONT_FILES = ("repl_shim.py", "lean4-2021.tar.zst")
HOME_VAR = "LEAN2021_HOME"
NAME = "the Lean 4 of June 2021"
SUMMARY = f"{NAME} (core library only: no Mathlib, no lake, no --json)"


class FrontFailed(RuntimeError):
    """The front could not unpack or run its toolchain."""


def front_folder(program: str) -> Path | None:
    """The front's folder when ``program`` (an absolute path) is the 2021 kernel's front."""
    if not os.path.isabs(program) or not os.path.isfile(program):
        return None
    folder = Path(os.path.realpath(program)).parent
    return folder if all((folder / name).is_file() for name in FRONT_FILES) else None


def toolchain_home() -> Path:
    """Where the front keeps the unpacked toolchain: the front's own default, read the same
    way (``${LEAN2021_HOME:-${HOME:-/tmp}/.cache/lean4-2021}``)."""
    if home := os.environ.get(HOME_VAR):
        return Path(home)
    return Path(os.environ.get("HOME") or "/tmp") / ".cache" / "lean4-2021"


@functools.cache
def unpacked_version(program: str, home: str) -> str:
    """Unpack the toolchain into ``home`` if it is not there (the front does, under its
    lock) and return its ``lean --version`` line; ``FrontFailed`` when that fails."""
    try:
        done = subprocess.run(
            [program, "--lean", "--version"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, HOME_VAR: home},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FrontFailed(f"{program} --lean --version failed: {exc}") from None
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or not said:
        tail = " | ".join(said.splitlines()[-3:])
        raise FrontFailed(f"{program} could not unpack its toolchain into {home}: {tail}")
    return said.splitlines()[0]


def front_env(home: Path) -> dict[str, str]:
    """The variables the front runs with: where its toolchain is, and its .olean folder (the
    front sets LEAN_PATH to the same; here it also sizes the memory cap)."""
    return {HOME_VAR: str(home), "LEAN_PATH": str(home / "lean4-2021" / "lib" / "lean")}
