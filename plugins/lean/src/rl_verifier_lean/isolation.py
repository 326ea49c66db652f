"""Where Lean runs: in a sandbox of the sandbox's backend table (bubblewrap) when it works
here, else a plain subprocess.

Sandboxed, a Lean process runs as a dedicated unprivileged uid in its own cgroup (both held
for the process's life; everything left of it is killed after), with every namespace unshared
(no network), an empty environment apart from Lean's own variables, a fresh tmpfs work dir,
read-only system dirs and read-only views of exactly the host paths Lean needs (toolchain,
project, REPL binary). Its memory cap is ``memory_mb`` beyond the mapped .olean files: the
cgroup's resident-memory limit where the host allows cgroups, else RLIMIT_AS. Unsandboxed, it
gets its own session, RLIMIT_AS at the same cap and no core dumps.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import resource
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from rl_verifier_lean.locate import LeanLaunch, olean_bytes
from rl_verifier_sandbox import (
    AsyncLiveProcess,
    BadJob,
    Job,
    Limits,
    Policy,
    Sandbox,
    SandboxUnavailable,
    get_sandbox,
)

log = logging.getLogger(__name__)
READ_LIMIT = 64 * 1024 * 1024  # longest line read from Lean's output
UNLIMITED = 10**7  # the sandbox's "no CPU / wall limit" value
CHDIR = 'cd "$1" && shift && exec "$@"'
UID_SLOTS = 128  # sandbox uids Lean may hold: one per REPL, so room for large pools


class LeanSetupError(RuntimeError):
    """Lean cannot be started as configured (for example, the sandbox is required but absent)."""


@dataclass
class LeanProcess:
    """A started Lean process and what it holds in the sandbox (``live``: its uid and
    cgroup) until ``release``."""

    proc: asyncio.subprocess.Process
    isolation: str  # the sandbox backend's name ("bwrap"), or "none"
    live: AsyncLiveProcess | None = None

    def release(self) -> None:
        """Kill whatever is left of the process and free its uid and cgroup; idempotent,
        blocking."""
        live, self.live = self.live, None
        if live is not None:
            live.release()

    def out_of_memory(self) -> bool:
        """Whether its sandbox cgroup OOM-killed a process of it (at the memory cap, the
        kernel kills Lean instead of Lean reporting that it ran out of memory)."""
        usage = self.live.usage() if self.live is not None else None
        return usage is not None and usage.oom_kills > 0


@functools.cache
def _probe(mode: str) -> Sandbox | str:
    """The sandbox ``mode`` (``auto`` or a backend's name) opens here, or why it cannot."""
    try:
        return get_sandbox(mode, uid_slots=UID_SLOTS)
    except SandboxUnavailable as exc:
        return str(exc)


@functools.cache
def _warn_unsandboxed(reason: str) -> None:
    log.warning(
        "Lean runs WITHOUT a sandbox (%s): it can read the host's files and network. Install "
        "bubblewrap, or set sandbox='none' to accept this.",
        reason,
    )


def choose_sandbox(mode: str) -> Sandbox | None:
    """The sandbox Lean runs in (``None``: plain subprocesses); ``LeanSetupError`` when a
    named sandbox is required and does not work here."""
    if mode == "none":
        return None
    found = _probe(mode)
    if isinstance(found, str):
        if mode != "auto":
            raise LeanSetupError(f"sandbox={mode!r} but it cannot run here: {found}")
        _warn_unsandboxed(found)
        return None
    return found


def sandbox_reason(mode: str) -> tuple[str, str]:
    """(isolation, detail) for reports: which sandbox Lean gets here, and why."""
    if mode == "none":
        return "none", "sandbox='none' in the config"
    found = _probe(mode)
    if isinstance(found, str):
        return "none", found
    return found.name, f"the {found.name} sandbox works here"


def memory_cap(launch: LeanLaunch, memory_mb: int) -> int:
    """The memory cap in bytes: ``memory_mb`` on top of the .olean files Lean maps from
    LEAN_PATH, so the cap bounds Lean's own memory, not the size of the library it imports."""
    return (memory_mb << 20) + olean_bytes(launch.env.get("LEAN_PATH", ""))


def lean_job(
    launch: LeanLaunch,
    sandbox: Sandbox,
    memory_mb: int,
    *,
    extra_args: tuple[str, ...] = (),
    files: Mapping[str, str] | None = None,
    wall_s: float = UNLIMITED,
    python: bool = False,
) -> Job:
    """A sandbox job running ``launch`` (``python`` first: the sandbox's interpreter; set
    ``python`` when the command runs it later, as the file backend's driver does)."""
    argv = [*launch.argv, *extra_args]
    python = python or argv[0] == "python"
    if argv[0] == "python":
        argv[0] = sandbox.python_executable
    if launch.cwd:
        argv = ["/bin/sh", "-c", CHDIR, "sh", launch.cwd, *argv]
    limits = Limits(
        wall_s=wall_s,
        cpu_s=UNLIMITED,  # Lean is multi-threaded; the wall deadline bounds it
        memory_bytes=memory_cap(launch, memory_mb),  # the cgroup's, else RLIMIT_AS
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
    limit = memory_cap(launch, memory_mb)

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


async def start(launch: LeanLaunch, sandbox: Sandbox | None, memory_mb: int) -> LeanProcess:
    """Start a long-lived Lean process (the REPL) with pipes on stdin, stdout and stderr."""
    if sandbox is None:
        pipe = asyncio.subprocess.PIPE
        return LeanProcess(await spawn_plain(launch, memory_mb, stdin=pipe), "none")
    job = lean_job(launch, sandbox, memory_mb)
    try:
        live = await sandbox.open_async_process(job, read_limit=READ_LIMIT)
    except (BadJob, SandboxUnavailable) as exc:
        raise LeanSetupError(f"cannot sandbox Lean: {exc}") from None
    return LeanProcess(live.proc, sandbox.name, live)
