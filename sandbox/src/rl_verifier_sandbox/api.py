"""The sandbox interface every backend implements, and what long-lived sandboxed processes
look like to their users."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rl_verifier_sandbox.linux.cgroups import CgroupUsage


UNLIMITED_CPU_S = 10**7  # a cpu_s this large means no CPU limit


# Warm fork servers' defaults: the tmpfs size of /job and /tmp, and what a server imports
# before its first job (pytest and its default plugins).
SERVER_TMP_BYTES = 256 << 20
WARM_PYTEST = ("pytest",)


@dataclass(frozen=True)
class Limits:
    """Per-job resource limits. Every field is enforced or reported by ``doctor``, which also
    names the mechanism (on bwrap: the job's cgroup where the host allows one, else rlimits)."""

    wall_s: float = 10.0  # parent-enforced deadline; every process of the job is killed
    cpu_s: float = 10.0  # total CPU of the job's cgroup, and RLIMIT_CPU per process
    memory_bytes: int = 1 << 30  # resident memory of the job's cgroup, else RLIMIT_AS
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE
    open_files: int = 256  # RLIMIT_NOFILE
    processes: int = 64  # cgroup pids.max when writable, else RLIMIT_NPROC (non-root uid)
    stdout_bytes: int = 1 << 20  # captured output is capped; the rest is discarded
    stderr_bytes: int = 1 << 20
    tmp_bytes: int = 64 << 20  # size of the job's tmpfs /tmp and work dir


@dataclass(frozen=True)
class Policy:
    """What the job may see. Network is off unless asked for (no backend offers it yet)."""

    env: Mapping[str, str] = field(default_factory=dict)  # the only variables the job sees
    python: bool = True  # expose a Python interpreter (with pytest) read-only
    readonly_files: Mapping[str, str | bytes] = field(default_factory=dict)  # abs path -> data
    # host files or directories shown read-only at the same absolute path (bwrap; docker with
    # an engine on this host)
    readonly_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Job:
    argv: tuple[str, ...]  # "python" as argv[0] means the sandbox's interpreter
    files: Mapping[str, str | bytes] = field(default_factory=dict)  # into the fresh work dir
    stdin: bytes = b""
    limits: Limits = field(default_factory=Limits)
    policy: Policy = field(default_factory=Policy)


@dataclass(frozen=True)
class Result:
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool  # the wall-clock deadline was hit
    limit_hit: str | None  # "cpu", "memory", "file_size", "processes", "output" when known
    wall_s: float
    cpu_s: float


class SandboxUnavailable(RuntimeError):
    """This backend cannot run here; the message says why."""


class BadJob(ValueError):
    """The job itself is malformed (reported in the Result, never raised from ``run``)."""


class LiveProcess(Protocol):
    """A running sandboxed process with live pipes (``Sandbox.open_process``): write to its
    stdin, read its stdout; its stderr is kept, capped. The caller enforces the deadline."""

    @property
    def stdin_fd(self) -> int: ...

    @property
    def stdout_fd(self) -> int: ...

    @property
    def stderr(self) -> bytearray: ...

    def finish(self) -> int | None:
        """Kill what is left, release what it held (uid, cgroup, container); its exit status
        when known."""
        ...


class AsyncLiveProcess(Protocol):
    """A running sandboxed process with asyncio pipes on stdin, stdout and stderr
    (``Sandbox.open_async_process``), such as a REPL kept across requests."""

    @property
    def proc(self) -> asyncio.subprocess.Process: ...

    def usage(self) -> CgroupUsage | None:
        """CPU, peak memory, OOM kills and refused forks of the process's cgroup so far
        (final after ``release``); None where it has no cgroup."""
        ...

    def release(self) -> None:
        """Kill what is left of the process and free what it held (uid, cgroup); idempotent,
        blocking (call it in a thread from async code)."""
        ...


class Sandbox(ABC):
    name: str
    isolates: bool  # False only for the process backend

    @abstractmethod
    def run(self, job: Job) -> Result:
        """Run one job to completion or deadline. Thread-safe; never raises for job faults."""

    async def arun(self, job: Job) -> Result:
        return await asyncio.to_thread(self.run, job)

    def open_process(self, job: Job) -> LiveProcess:
        """Start ``job`` as a long-lived process with live pipes, isolated and limited exactly
        as a one-shot job (``job.limits.wall_s`` is the caller's to enforce); it holds its
        uid (and cgroup, or container) until ``finish``. SandboxUnavailable where this backend
        cannot, or the process cannot start; BadJob for a malformed job."""
        raise SandboxUnavailable(f"the {self.name} backend cannot hold a live process")

    async def open_async_process(self, job: Job, *, read_limit: int = 1 << 16) -> AsyncLiveProcess:
        """``open_process`` with asyncio pipes (``read_limit``: the longest line its stdout
        and stderr readers take)."""
        raise SandboxUnavailable(f"the {self.name} backend cannot hold an asyncio process")

    @property
    def python_executable(self) -> str:
        """The interpreter that ``"python"`` as ``argv[0]`` runs inside this sandbox's jobs
        (for command lines that run Python later than ``argv[0]``)."""
        return "python3"

    def mechanisms(self) -> dict[str, str]:
        """What enforces each limit here (``rlv sandbox doctor``'s third column): keys such as
        memory, processes, cpu, syscalls, cleanup; values such as cgroup-v1, rlimit, seccomp,
        namespace, host. Empty where the backend does not say."""
        return {}

    def close(self) -> None:
        """Release warm resources (pools, servers)."""
