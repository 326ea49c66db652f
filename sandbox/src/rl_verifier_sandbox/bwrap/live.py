"""Long-lived sandboxed processes on a lease: a REPL kept across requests, one side of a relay.

Both flavours start the lease's command with pipes and give the lease back if the process
cannot start; ending the process kills its whole group and releases the lease (every process
left in its cgroup and of its uid is killed, the cgroup removed, the uid freed).

* ``start``: ``subprocess.Popen`` pipes as raw fds, stderr drained in a thread into a capped
  buffer (``LiveProcess``);
* ``start_async``: an ``asyncio`` subprocess (``AsyncLiveProcess``), for asyncio readers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from rl_verifier_sandbox.api import SandboxUnavailable
from rl_verifier_sandbox.bwrap.lease import Lease
from rl_verifier_sandbox.linux.cgroups import CgroupUsage

STDERR_CAP = 64 << 10  # stderr kept of a ``LeasedProcess``


@dataclass
class LeasedProcess:
    """A process with raw pipes and the lease (uid slot, cgroup) it holds until ``finish``."""

    proc: subprocess.Popen[bytes]
    lease: Lease
    stderr: bytearray = field(default_factory=bytearray)
    _drain: threading.Thread | None = None

    @property
    def stdin_fd(self) -> int:
        assert self.proc.stdin is not None
        return self.proc.stdin.fileno()

    @property
    def stdout_fd(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def finish(self) -> int | None:
        _killpg(self.proc.pid, self.proc.returncode)
        code = self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._drain is not None:
            self._drain.join(timeout=2.0)
        self.lease.release()
        return code


@dataclass
class AsyncLeasedProcess:
    """An asyncio subprocess and the lease it holds until ``release``."""

    proc: asyncio.subprocess.Process
    lease: Lease

    def usage(self) -> CgroupUsage | None:
        return self.lease.usage()

    def release(self) -> None:
        _killpg(self.proc.pid, self.proc.returncode)
        self.lease.release()


def start(lease: Lease) -> LeasedProcess:
    """Start the lease's job with raw pipes."""
    with _started(lease) as (argv, fds):
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=tuple(fds),
            start_new_session=True,
            close_fds=True,
            env={},
        )
    live = LeasedProcess(proc, lease)
    live._drain = threading.Thread(target=_drain, args=(live,), daemon=True)
    live._drain.start()
    return live


async def start_async(lease: Lease, *, read_limit: int) -> AsyncLeasedProcess:
    """Start the lease's job with asyncio pipes."""
    pipe = asyncio.subprocess.PIPE
    with _started(lease) as (argv, fds):
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
            pass_fds=fds,
            env={},
            start_new_session=True,
            limit=read_limit,
        )
    return AsyncLeasedProcess(proc, lease)


@contextlib.contextmanager
def _started(lease: Lease) -> Iterator[tuple[list[str], list[int]]]:
    """The lease's command and fds; when the block raises (the process did not start), the
    lease is released and an OS failure becomes SandboxUnavailable."""
    try:
        with lease.command() as (argv, fds):
            yield argv, fds
    except (OSError, subprocess.SubprocessError) as exc:
        lease.release()
        raise SandboxUnavailable(f"could not start the sandboxed process: {exc}") from exc
    except BaseException:
        lease.release()
        raise


def _drain(live: LeasedProcess) -> None:
    pipe = live.proc.stderr
    assert pipe is not None
    while chunk := os.read(pipe.fileno(), 1 << 16):
        room = STDERR_CAP - len(live.stderr)
        if room > 0:
            live.stderr += chunk[:room]
    pipe.close()


def _killpg(pid: int, returncode: int | None) -> None:
    """Kill the process group of ``pid`` unless the process was reaped (its pid may be reused;
    the lease kills what is left anyway)."""
    if returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
