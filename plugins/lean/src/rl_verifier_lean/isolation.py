"""Where Lean runs: inside the bubblewrap sandbox when it works here, else a plain subprocess.

Sandboxed, a Lean process runs as a dedicated unprivileged uid (held for the process's life and
reaped after), with every namespace unshared (no network), an empty environment apart from
Lean's own variables, a fresh tmpfs work dir, read-only system dirs and read-only views of
exactly the host paths Lean needs (toolchain, project, REPL binary), and RLIMIT_AS at
``memory_mb`` beyond the mapped .olean files. Unsandboxed, it gets its own session, the same
RLIMIT_AS and no core dumps.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import resource
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rl_verifier_lean.locate import LeanLaunch, olean_bytes

log = logging.getLogger(__name__)
READ_LIMIT = 64 * 1024 * 1024  # longest line read from Lean's output
UNLIMITED = 10**7  # the sandbox's "no CPU / wall limit" value
CHDIR = 'cd "$1" && shift && exec "$@"'

if TYPE_CHECKING:
    from rl_verifier_sandbox.api import Job
    from rl_verifier_sandbox.bwrap import BwrapSandbox


class LeanSetupError(RuntimeError):
    """Lean cannot be started as configured (for example, the sandbox is required but absent)."""


@dataclass
class LeanProcess:
    """A started Lean process and what it holds (its sandbox uid) until ``release``."""

    proc: asyncio.subprocess.Process
    isolation: str  # "bwrap" or "none"
    _release: Callable[[], None] | None = field(default=None, repr=False)

    def release(self) -> None:
        """Kill whatever is left of the process and free its uid; idempotent, blocking."""
        release, self._release = self._release, None
        if release is not None:
            release()


@functools.cache
def _probe_bwrap() -> BwrapSandbox | str:
    try:
        from rl_verifier_sandbox.api import SandboxUnavailable
        from rl_verifier_sandbox.bwrap import BwrapSandbox
        from rl_verifier_sandbox.slots import UidSlots
    except ImportError:
        return "rl-verifier-sandbox is not installed"
    sandbox = BwrapSandbox(slots=UidSlots(count=128))
    try:
        sandbox.check()
    except SandboxUnavailable as exc:
        return str(exc)
    return sandbox


@functools.cache
def _warn_unsandboxed(reason: str) -> None:
    log.warning(
        "Lean runs WITHOUT a sandbox (%s): it can read the host's files and network. Install "
        "bubblewrap, or set sandbox='none' to accept this.",
        reason,
    )


def choose_sandbox(mode: str) -> BwrapSandbox | None:
    """The sandbox Lean runs in (``None``: plain subprocesses); ``LeanSetupError`` when
    bwrap is required and does not work here."""
    if mode == "none":
        return None
    found = _probe_bwrap()
    if isinstance(found, str):
        if mode == "bwrap":
            raise LeanSetupError(f"sandbox='bwrap' but bubblewrap cannot run here: {found}")
        _warn_unsandboxed(found)
        return None
    return found


def sandbox_reason(mode: str) -> tuple[str, str]:
    """(isolation, detail) for reports: which sandbox Lean gets here, and why."""
    if mode == "none":
        return "none", "sandbox='none' in the config"
    found = _probe_bwrap()
    if isinstance(found, str):
        return "none", found
    return "bwrap", "bubblewrap works here"


def address_space(launch: LeanLaunch, memory_mb: int) -> int:
    """RLIMIT_AS in bytes: ``memory_mb`` on top of the .olean files Lean maps from LEAN_PATH,
    so the cap bounds Lean's own memory, not the size of the library it imports."""
    return (memory_mb << 20) + olean_bytes(launch.env.get("LEAN_PATH", ""))


def lean_job(
    launch: LeanLaunch,
    sandbox: BwrapSandbox,
    memory_mb: int,
    *,
    extra_args: tuple[str, ...] = (),
    files: Mapping[str, str] | None = None,
    wall_s: float = UNLIMITED,
    python: bool = False,
) -> Job:
    """A sandbox job running ``launch`` (``python`` first: the sandbox's interpreter; set
    ``python`` when the command runs it later, as the file backend's driver does)."""
    from rl_verifier_sandbox.api import Job, Limits, Policy

    argv = [*launch.argv, *extra_args]
    python = python or argv[0] == "python"
    if argv[0] == "python":
        argv[0] = sandbox.python.executable
    if launch.cwd:
        argv = ["/bin/sh", "-c", CHDIR, "sh", launch.cwd, *argv]
    limits = Limits(
        wall_s=wall_s,
        cpu_s=UNLIMITED,  # Lean is multi-threaded; the wall deadline bounds it
        memory_bytes=address_space(launch, memory_mb),
        file_bytes=1 << 30,
        open_files=65536,  # Mathlib is thousands of .olean files
        processes=1024,  # threads count against the uid's process limit
        stdout_bytes=64 << 20,
        tmp_bytes=256 << 20,
    )
    policy = Policy(env=dict(launch.env), python=python, readonly_paths=tuple(launch.paths))
    return Job(argv=tuple(argv), files=dict(files or {}), limits=limits, policy=policy)


async def spawn_plain(
    launch: LeanLaunch, memory_mb: int, *extra_args: str, stdin: int | None = None
) -> asyncio.subprocess.Process:
    """Start Lean unsandboxed: its own session, the same RLIMIT_AS, no core dumps."""
    argv = [*launch.argv, *extra_args]
    if argv[0] == "python":
        argv[0] = sys.executable
    limit = address_space(launch, memory_mb)

    def limits() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    pipe = asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin,
        stdout=pipe,
        stderr=pipe,
        cwd=launch.cwd,
        env={**os.environ, **launch.env},
        start_new_session=True,
        preexec_fn=limits,
        limit=READ_LIMIT,
    )


async def start(launch: LeanLaunch, sandbox: BwrapSandbox | None, memory_mb: int) -> LeanProcess:
    """Start a long-lived Lean process (the REPL) with pipes on stdin, stdout and stderr."""
    pipe = asyncio.subprocess.PIPE
    if sandbox is None:
        return LeanProcess(await spawn_plain(launch, memory_mb, stdin=pipe), "none")
    from rl_verifier_sandbox._files import BadJob

    job = lean_job(launch, sandbox, memory_mb)
    uid = await asyncio.to_thread(sandbox.slots.acquire)
    try:
        with sandbox.command(job, uid) as (argv, fds):
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=pipe,
                stdout=pipe,
                stderr=pipe,
                pass_fds=fds,
                env={},
                start_new_session=True,
                limit=READ_LIMIT,
            )
    except BadJob as exc:
        sandbox.slots.release(uid)
        raise LeanSetupError(f"cannot sandbox Lean: {exc}") from None
    except BaseException:
        sandbox.slots.release(uid)
        raise
    return LeanProcess(proc, "bwrap", functools.partial(sandbox.slots.release, uid))
