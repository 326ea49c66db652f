"""The sandbox interface every backend implements. (Contract shared with pytest_exec.)"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field


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


class Sandbox(ABC):
    name: str
    isolates: bool  # False only for the process backend

    @abstractmethod
    def run(self, job: Job) -> Result:
        """Run one job to completion or deadline. Thread-safe; never raises for job faults."""

    async def arun(self, job: Job) -> Result:
        import asyncio

        return await asyncio.to_thread(self.run, job)

    def close(self) -> None:
        """Release warm resources (pools, servers)."""
