"""Turn a raw wait status plus captured output into the shared ``Result``; the ``Result`` of a
malformed job."""

from __future__ import annotations

import os
import signal

from rl_verifier_sandbox.api import Limits, Result

_STDERR_HINTS = (
    (b"MemoryError", "memory"),
    (b"Cannot allocate memory", "memory"),
    (b"File too large", "file_size"),
    (b"Resource temporarily unavailable", "processes"),
)


def split_status(status: int, *, shell_style: bool) -> tuple[int | None, int | None]:
    """(exit_code, signal). With ``shell_style`` an exit code 128+N (bwrap's report of a
    signal-killed child) is read as signal N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    if shell_style and 128 < code < 128 + 65:
        return None, code - 128
    return code, None


def classify(
    exit_code: int | None,
    sig: int | None,
    stderr: bytes,
    limits: Limits,
    *,
    cpu_s: float,
    output_killed: bool,
    cgroup_hit: str | None = None,
    pids_refused: bool = False,
) -> str | None:
    """Best-effort name of the limit that ended the job. ``cgroup_hit`` is a limit a job
    cgroup saw hit (an OOM kill, its CPU total); ``pids_refused``: a fork was refused."""
    if output_killed:
        return "output"
    if cgroup_hit:
        return cgroup_hit
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= limits.cpu_s * 0.95):
        return "cpu"
    if sig == signal.SIGXFSZ:
        return "file_size"
    if exit_code == 0:
        return None
    tail = stderr[-4096:]
    for needle, name in _STDERR_HINTS:
        if needle in tail:
            return name
    return "processes" if pids_refused else None


def make_result(
    status: int,
    *,
    stdout: bytes,
    stderr: bytes,
    stdout_truncated: bool,
    stderr_truncated: bool,
    timed_out: bool,
    output_killed: bool,
    wall_s: float,
    cpu_s: float,
    limits: Limits,
    shell_style: bool,
    cgroup_hit: str | None = None,
    pids_refused: bool = False,
) -> Result:
    code, sig = split_status(status, shell_style=shell_style)
    if timed_out:
        limit: str | None = None
    else:
        limit = classify(
            code,
            sig,
            stderr,
            limits,
            cpu_s=cpu_s,
            output_killed=output_killed,
            cgroup_hit=cgroup_hit,
            pids_refused=pids_refused,
        )
    return Result(
        exit_code=code,
        signal=sig,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=stdout_truncated,
        stderr_truncated=stderr_truncated,
        timed_out=timed_out,
        limit_hit=limit,
        wall_s=wall_s,
        cpu_s=cpu_s,
    )


def bad_job_result(message: str) -> Result:
    """The result of a job that could not start because it is malformed (see ``BadJob``)."""
    return Result(
        exit_code=None,
        signal=None,
        stdout=b"",
        stderr=f"sandbox: {message}\n".encode(),
        stdout_truncated=False,
        stderr_truncated=False,
        timed_out=False,
        limit_hit=None,
        wall_s=0.0,
        cpu_s=0.0,
    )
