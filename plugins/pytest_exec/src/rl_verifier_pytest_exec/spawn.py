"""Start one sandboxed process with live pipes, for the two-process relay.

``Sandbox.run`` is one-shot (the whole stdin is given up front); the relay has to talk
to two processes while they run. This starts a process with exactly the isolation of
the bwrap backend, through its own command builder (``BwrapSandbox.command``): every
namespace unshared (no network), read-only system binds, a fresh tmpfs work dir, an
empty environment, the job's rlimits, and a dedicated unprivileged uid held for the
process's whole life and reaped (every process of that uid killed) when it ends.
The caller enforces the wall deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field

from rl_verifier_sandbox.api import Job, SandboxUnavailable
from rl_verifier_sandbox.bwrap import BwrapSandbox

STDERR_CAP = 64 << 10


@dataclass
class Live:
    """A running sandboxed process: write to its stdin, read its stdout."""

    proc: subprocess.Popen[bytes]
    stderr: bytearray = field(default_factory=bytearray)
    _drain: threading.Thread | None = None
    _uid: int | None = None
    _sandbox: BwrapSandbox | None = None

    @property
    def stdin_fd(self) -> int:
        assert self.proc.stdin is not None
        return self.proc.stdin.fileno()

    @property
    def stdout_fd(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def finish(self) -> int | None:
        """Kill what is left, reap it and give the uid back; the exit status."""
        self.kill()
        code = self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._drain is not None:
            self._drain.join(timeout=2.0)
        if self._sandbox is not None and self._uid is not None:
            self._sandbox.slots.release(self._uid)
            self._uid = None
        return code


class Spawner:
    """Starts live sandboxed processes with a bwrap sandbox's isolation."""

    def __init__(self, sandbox: BwrapSandbox) -> None:
        self.sandbox = sandbox

    def __call__(self, job: Job) -> Live:
        sandbox = self.sandbox
        uid = sandbox.slots.acquire()
        try:
            with sandbox.command(job, uid) as (argv, fds):
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
            sandbox.slots.release(uid)
            raise SandboxUnavailable(f"could not start bwrap: {exc}") from exc
        except BaseException:
            sandbox.slots.release(uid)
            raise
        live = Live(proc, _uid=uid, _sandbox=sandbox)
        live._drain = threading.Thread(target=_drain, args=(live,), daemon=True)
        live._drain.start()
        return live


def _drain(live: Live) -> None:
    pipe = live.proc.stderr
    assert pipe is not None
    while chunk := os.read(pipe.fileno(), 1 << 16):
        room = STDERR_CAP - len(live.stderr)
        if room > 0:
            live.stderr += chunk[:room]
    pipe.close()
