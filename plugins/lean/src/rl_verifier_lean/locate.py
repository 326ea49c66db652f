"""Find the Lean toolchain and the REPL, and say what to install when they are missing."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rl_verifier_lean import lean2021
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
    "or config `project` (or name a REPL command in RLV_LEAN_REPL or config `repl_command`). "
    "Check with `rlv lean doctor`."
)
REPL_VAR = "RLV_LEAN_REPL"


class LeanMissing(RuntimeError):
    """No way to run Lean here; the message says what to install."""


@dataclass(frozen=True)
class LeanLaunch:
    """How to start one Lean process: decided on the host, before any sandbox."""

    argv: list[str]  # argv[0] "python" means the interpreter running rl-verifier (or the sandbox's)
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # Lean's variables (LEAN_PATH, ...)
    paths: list[str] = field(default_factory=list)  # host paths Lean reads (shown read-only)
    about: str = ""  # which Lean this is, when known (for reports)


SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")
_LAKE_KEYS = re.compile(r"^(?:LEAN|LAKE|ELAN)\w*$|^(?:PATH|LD_LIBRARY_PATH)$")


def elan_home() -> Path:
    return Path(os.environ.get("ELAN_HOME", Path.home() / ".elan"))


def elan_bin() -> Path:
    return elan_home() / "bin"


def which(tool: str) -> str | None:
    found = shutil.which(tool)
    if found:
        return found
    candidate = elan_bin() / tool
    return str(candidate) if candidate.exists() else None


@functools.cache
def lake_env(lake: str, project: str) -> dict[str, str]:
    """The variables `lake env` gives Lean in ``project`` (LEAN_PATH, LEAN_SYSROOT, ...)."""
    try:
        done = subprocess.run(
            [lake, "env", "env", "-0"], cwd=project, capture_output=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LeanMissing(f"`lake env` failed in {project}: {exc}. " + INSTALL_HINT) from None
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip()[-300:]
        raise LeanMissing(f"`lake env` failed in {project}: {tail}. " + INSTALL_HINT)
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return {key: value for key, value in pairs if _LAKE_KEYS.match(key)}


def built_repl(project: str) -> str | None:
    """The REPL binary built in ``project`` (its own or as a dependency), if any."""
    root = Path(project)
    found = [root / ".lake/build/bin/repl"]
    found += sorted(root.glob(".lake/packages/*/.lake/build/bin/repl"))
    return next((str(p) for p in found if p.is_file() and os.access(p, os.X_OK)), None)


def sysroot_env() -> dict[str, str]:
    """LEAN_SYSROOT of the default toolchain, so the REPL need not call elan's `lean` proxy."""
    lean = which("lean")
    if not lean:
        return {}
    try:
        done = subprocess.run([lean, "--print-prefix"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    prefix = done.stdout.strip()
    return {"LEAN_SYSROOT": prefix} if done.returncode == 0 and prefix else {}


def repl_command(config: LeanConfig) -> list[str] | None:
    """The REPL command: ``repl_command``, else (unless ``project`` is set) ``$RLV_LEAN_REPL``
    split as a shell would; ``LeanMissing`` when the variable is not a command line."""
    if config.repl_command:
        return list(config.repl_command)
    raw = os.environ.get(REPL_VAR, "").strip()
    if config.project or not raw:
        return None
    try:
        return shlex.split(raw) or None
    except ValueError as exc:
        raise LeanMissing(f"{REPL_VAR}={raw!r} is not a command line: {exc}") from None


def repl_launch(config: LeanConfig, *, sandboxed: bool) -> LeanLaunch:
    """How to start the REPL, or ``LeanMissing`` saying what to install."""
    project = config.project_dir()
    if command := repl_command(config):
        return with_paths(known_front(LeanLaunch(command, project)), config)
    if project:
        lake = which("lake")
        if not lake or not Path(project).is_dir():
            raise LeanMissing(
                f"project {project!r} set but lake or the directory is missing. " + INSTALL_HINT
            )
        env = lake_env(lake, project)
        binary = built_repl(project)
        if binary:
            return with_paths(LeanLaunch([binary], project, env), config)
        if sandboxed:
            raise LeanMissing(
                f"the REPL is not built in {project}: run `lake build repl` there (Lean runs "
                "sandboxed, read-only, so it cannot build it). " + INSTALL_HINT
            )
        return with_paths(LeanLaunch([lake, "exe", "repl"], project, env), config)
    if repl := which("repl"):
        return with_paths(known_front(LeanLaunch([repl], None, sysroot_env())), config)
    raise LeanMissing(INSTALL_HINT)


def known_front(launch: LeanLaunch) -> LeanLaunch:
    """``launch`` as it is, unless its program is the 2021 kernel's front (see
    ``lean2021``): then unpacked here on the host first, started at its real path, with its
    folder and unpacked toolchain shown read-only to the sandbox."""
    folder = lean2021.front_folder(launch.argv[0])
    if folder is None:
        return launch
    program, home = os.path.realpath(launch.argv[0]), lean2021.toolchain_home()
    try:
        version = lean2021.unpacked_version(program, str(home))
    except lean2021.FrontFailed as exc:
        raise LeanMissing(str(exc)) from None
    return LeanLaunch(
        [program, *launch.argv[1:]],
        launch.cwd,
        {**launch.env, **lean2021.front_env(home)},
        [str(folder), str(home)],
        f"{version}, {lean2021.SUMMARY}",
    )


def file_launch(config: LeanConfig) -> LeanLaunch:
    """`lean --json` for the per-file backend: the toolchain's binary run directly with the
    variables `lake env` gives in the project (as `lake env lean` would), so the backend can
    add its own build directory to LEAN_PATH."""
    lake, project = which("lake"), config.project_dir()
    if not lake or not project or not Path(project).is_dir():
        command = repl_command(config)
        if command and lean2021.front_folder(command[0]):
            raise LeanMissing(
                "backend 'file' needs lake and `lean --json` (a Lake project); "
                f"{lean2021.NAME} has neither: use backend 'repl'"
            )
        raise LeanMissing(INSTALL_HINT)
    env = lake_env(lake, project)  # also sizes the memory cap (LEAN_PATH)
    sysroot = env.get("LEAN_SYSROOT")
    if not sysroot:
        raise LeanMissing(f"`lake env` in {project} gave no LEAN_SYSROOT. " + INSTALL_HINT)
    return with_paths(LeanLaunch([f"{sysroot}/bin/lean", "--json"], project, env), config)


INSTALL_CHECKER = (
    "Kernel replay (replay=true, the default with backend='file') needs a checker with "
    "lean4checker's interface: `leanchecker` ships with Lean 4.28 and later; for older "
    "toolchains add `require lean4checker from git "
    '"https://github.com/leanprover/lean4checker"` at the toolchain\'s tag to the project and '
    "`lake build lean4checker`; or set replay_command, or replay=false."
)


def replay_argv(config: LeanConfig, launch: LeanLaunch) -> list[str]:
    """The kernel-replay checker (module name appended): ``replay_command``, else
    ``leanchecker`` of the toolchain, else lean4checker built in the project, else either on
    PATH; ``LeanMissing`` saying what to install."""
    if config.replay_command:
        return list(config.replay_command)
    found = []
    if sysroot := launch.env.get("LEAN_SYSROOT"):
        found.append(Path(sysroot) / "bin" / "leanchecker")
    if launch.cwd:
        root = Path(launch.cwd)
        found.append(root / ".lake/build/bin/lean4checker")
        found += sorted(root.glob(".lake/packages/*/.lake/build/bin/lean4checker"))
    for path in found:
        if path.is_file() and os.access(path, os.X_OK):
            return [str(path)]
    for tool in ("leanchecker", "lean4checker"):
        if on_path := shutil.which(tool):
            return [on_path]
    raise LeanMissing(INSTALL_CHECKER)


@functools.cache
def olean_bytes(lean_path: str) -> int:
    """Total size of the .olean files on a LEAN_PATH (Lean maps the imported ones)."""
    total = 0
    for entry in filter(None, lean_path.split(":")):
        for folder, _, files in os.walk(entry):
            for name in files:
                if name.endswith(".olean"):
                    with contextlib.suppress(OSError):
                        total += os.stat(os.path.join(folder, name)).st_size
    return total


def with_paths(launch: LeanLaunch, config: LeanConfig) -> LeanLaunch:
    """Fill in the host paths a sandboxed Lean must read."""
    wanted = [*config.sandbox_paths, *launch.paths]
    if launch.cwd:
        wanted.append(launch.cwd)
    if elan_home().is_dir():
        wanted.append(str(elan_home()))
    wanted += [arg for arg in launch.argv if os.path.isabs(arg)]
    for key in ("LEAN_SYSROOT", "LEAN_PATH", "LD_LIBRARY_PATH"):
        wanted += launch.env.get(key, "").split(":")
    return LeanLaunch(launch.argv, launch.cwd, launch.env, minimal_paths(wanted), launch.about)


def minimal_paths(paths: list[str]) -> list[str]:
    """Existing absolute paths outside system dirs, fewest first: a path reached through a
    symlink inside another listed path is replaced by its real location (the symlink in the
    read-only view leads there), and paths inside another listed path are dropped."""
    found: dict[str, str] = {}
    for path in paths:
        if path and os.path.isabs(path) and os.path.exists(path):
            real = os.path.realpath(path)
            if not any(inside(path, s) and inside(real, s) for s in SYSTEM_DIRS):
                found[os.path.normpath(path)] = real
    shown = set()
    for path, real in found.items():
        linked = path != real and any(q != path and inside(path, q) for q in found)
        shown.add(real if linked else path)
    return sorted(p for p in shown if not any(q != p and inside(p, q) for q in shown))


def inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")
