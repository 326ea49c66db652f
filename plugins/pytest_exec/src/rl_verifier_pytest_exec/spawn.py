"""Start one sandboxed process with live pipes, for the two-process relay.

``Sandbox.run`` is one-shot (the whole stdin is given up front); the relay has to talk
to two processes while they run. ``Spawner`` starts a process with exactly the isolation
of its sandbox's one-shot jobs:

* bwrap: the backend's own command builder under a ``Lease`` (every namespace unshared,
  read-only system binds, a fresh tmpfs work dir, an empty environment, the job's limits
  in its own cgroup where the host allows, else rlimits, and a dedicated unprivileged uid
  whose every process is killed when the process ends);
* docker: a live session of the docker backend (the same supervisor, container and limits
  as a one-shot job; the container is cleaned and reused, or destroyed, afterwards).

The caller enforces the wall deadline and calls ``finish``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Protocol

from rl_verifier_sandbox.api import Job, Sandbox, SandboxUnavailable
from rl_verifier_sandbox.bwrap import BwrapSandbox
from rl_verifier_sandbox.docker_backend import DockerSandbox
from rl_verifier_sandbox.lease import Lease

STDERR_CAP = 64 << 10


class Live(Protocol):
    """A running sandboxed process: write to its stdin, read its stdout."""

    @property
    def stdin_fd(self) -> int: ...

    @property
    def stdout_fd(self) -> int: ...

    @property
    def stderr(self) -> bytearray: ...

    def finish(self) -> int | None:
        """Kill what is left, release what it held; its exit status when known."""
        ...


@dataclass
class BwrapLive:
    """A bwrap process and the lease (uid slot, cgroup) it holds until ``finish``."""

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
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._drain is not None:
            self._drain.join(timeout=2.0)
        self.lease.release()
        return code


class Spawner:
    """Starts live sandboxed processes on a bwrap or docker sandbox."""

    def __init__(self, sandbox: Sandbox) -> None:
        if not isinstance(sandbox, BwrapSandbox | DockerSandbox):
            need = "the two-process mode needs bwrap or docker"
            raise SandboxUnavailable(f"{need}, not {sandbox.name}")
        self.sandbox = sandbox

    def __call__(self, job: Job) -> Live:
        if isinstance(self.sandbox, DockerSandbox):
            return self.sandbox.open_session(job)
        return _spawn_bwrap(self.sandbox, job)


def _spawn_bwrap(sandbox: BwrapSandbox, job: Job) -> BwrapLive:
    lease = sandbox.lease(job)
    try:
        with lease.command() as (argv, fds):
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
    except (OSError, subprocess.SubprocessError) as exc:
        lease.release()
        raise SandboxUnavailable(f"could not start bwrap: {exc}") from exc
    except BaseException:
        lease.release()
        raise
    live = BwrapLive(proc, lease)
    live._drain = threading.Thread(target=_drain, args=(live,), daemon=True)
    live._drain.start()
    return live


def _drain(live: BwrapLive) -> None:
    pipe = live.proc.stderr
    assert pipe is not None
    while chunk := os.read(pipe.fileno(), 1 << 16):
        room = STDERR_CAP - len(live.stderr)
        if room > 0:
            live.stderr += chunk[:room]
    pipe.close()
