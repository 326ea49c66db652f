"""Run a host process with a wall deadline, capped output capture and rusage accounting."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rl_verifier_sandbox.api import Limits, Result
from rl_verifier_sandbox.jobs.result import make_result

OUTPUT_KILL_FACTOR = 8  # keep draining up to this many times the cap, then kill the job
OUTPUT_KILL_MIN = 8 << 20
CPU_POLL_EVERY = 10  # wait-loop turns (5 ms each) between reads of ``cpu_used``


@dataclass
class Capture:
    """Bytes kept from one stream, how many were seen, and whether the cap was exceeded."""

    cap: int
    data: bytearray
    seen: int = 0

    @property
    def truncated(self) -> bool:
        return self.seen > self.cap


@dataclass(frozen=True)
class Outcome:
    """What happened to the host-side process tree."""

    status: int  # raw wait status
    stdout: Capture
    stderr: Capture
    timed_out: bool
    output_killed: bool
    wall_s: float
    cpu_s: float  # rusage of the waited-for process tree
    cpu_killed: bool = False  # killed because ``cpu_used`` passed the CPU limit

    def result(
        self,
        limits: Limits,
        *,
        shell_style: bool,
        cpu_s: float | None = None,
        cgroup_hit: str | None = None,
        pids_refused: bool = False,
    ) -> Result:
        """The shared ``Result`` for this outcome; a job cgroup supplies ``cpu_s`` (every
        process, waited for or not), ``cgroup_hit`` and ``pids_refused``."""
        return make_result(
            self.status,
            stdout=bytes(self.stdout.data),
            stderr=bytes(self.stderr.data),
            stdout_truncated=self.stdout.truncated,
            stderr_truncated=self.stderr.truncated,
            timed_out=self.timed_out,
            output_killed=self.output_killed,
            wall_s=self.wall_s,
            cpu_s=self.cpu_s if cpu_s is None else cpu_s,
            limits=limits,
            shell_style=shell_style,
            cgroup_hit="cpu" if self.cpu_killed else cgroup_hit,
            pids_refused=pids_refused,
        )


def kill_output_threshold(cap: int) -> int:
    return max(cap * OUTPUT_KILL_FACTOR, cap + OUTPUT_KILL_MIN)


def _drain(fd: int, cap: Capture, over: threading.Event) -> None:
    limit = kill_output_threshold(cap.cap)
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        room = cap.cap - len(cap.data)
        if room > 0:
            cap.data += chunk[:room]
        cap.seen += len(chunk)
        if cap.seen > limit:
            over.set()
    os.close(fd)


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_capped(
    argv: Sequence[str],
    limits: Limits,
    *,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    pass_fds: Sequence[int] = (),
    cpu_used: Callable[[], float] | None = None,
) -> Outcome:
    """Start ``argv`` in a new session; killpg it at the deadline or on an output flood, and
    when ``cpu_used()`` (polled every ~50 ms, e.g. a job cgroup's total) passes the CPU limit."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    over = threading.Event()
    out = Capture(limits.stdout_bytes, bytearray())
    err = Capture(limits.stderr_bytes, bytearray())
    readers = [
        threading.Thread(target=_drain, args=(os.dup(s.fileno()), c, over), daemon=True)
        for s, c in ((proc.stdout, out), (proc.stderr, err))
    ]
    proc.stdout.close()
    proc.stderr.close()
    for t in readers:
        t.start()
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()
    deadline = start + limits.wall_s
    timed_out = cpu_killed = False
    status = -1
    rusage_cpu = 0.0
    for polls in itertools.count():
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            rusage_cpu = ru.ru_utime + ru.ru_stime
            break
        if cpu_used is not None and polls % CPU_POLL_EVERY == 0:
            cpu_killed = cpu_used() > limits.cpu_s
        if over.is_set() or cpu_killed or time.monotonic() >= deadline:
            timed_out = not (over.is_set() or cpu_killed)
            _killpg(proc.pid)
            _, status, ru = os.wait4(proc.pid, 0)
            rusage_cpu = ru.ru_utime + ru.ru_stime
            break
        time.sleep(0.005)
    proc.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
    _killpg(proc.pid)  # stragglers that stayed in the group
    for t in readers:
        t.join(timeout=2.0)
    wall = time.monotonic() - start
    return Outcome(status, out, err, timed_out, over.is_set(), wall, rusage_cpu, cpu_killed)


def _feed(pipe: object, data: bytes) -> None:
    import io

    assert isinstance(pipe, io.BufferedWriter)
    try:
        if data:
            pipe.write(data)
        pipe.close()
    except OSError:
        pass
