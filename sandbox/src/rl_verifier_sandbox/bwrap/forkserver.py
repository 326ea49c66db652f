"""Warm Python fork servers: one sandboxed interpreter per slot forks a child per job.

Each server is a long-lived bwrap sandbox (own uid slot, own pid namespace) running
``_server_main.py`` with pytest already imported. A job is sent as a length-prefixed JSON frame;
the server writes the job's files into ``/job``, forks, applies the job's rlimits in the child,
captures capped output, enforces the wall deadline, kills every leftover process, and wipes
``/job``, ``/tmp`` and ``/dev/shm`` before answering. The trusted host side enforces a backstop
deadline: if the answer does not arrive in time the whole server is killed and restarted.

``PythonPool.open_process`` forks a *live* job the same way: the host keeps the other ends of
the job's stdin and stdout (passed to the server over its unix socket) and talks with the job
while it runs; ``finish`` has the server kill the job and everything it started and wipe the
writable mounts before the server takes its next job. Each forked job serves one conversation
and is then discarded; the server itself never runs job code.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from typing import Any, Protocol

from rl_verifier_sandbox.api import (
    SERVER_TMP_BYTES,
    UNLIMITED_CPU_S,
    WARM_PYTEST,
    BadJob,
    Job,
    Limits,
    LiveProcess,
    Policy,
    Result,
    Sandbox,
    SandboxUnavailable,
)
from rl_verifier_sandbox.bwrap import pyenv
from rl_verifier_sandbox.bwrap.lease import LeaseHost
from rl_verifier_sandbox.bwrap.poolstats import PoolStats
from rl_verifier_sandbox.jobs.env import BASE_ENV
from rl_verifier_sandbox.jobs.files import as_bytes, safe_relpath
from rl_verifier_sandbox.jobs.result import bad_job_result, make_result
from rl_verifier_sandbox.linux.cgroups import CgroupUsage, JobCgroup
from rl_verifier_sandbox.linux.slots import reap_uid

BACKSTOP_S = 2.0  # extra time the host grants the server beyond the job's wall limit
SERVER_LIMITS = Limits(
    wall_s=float("inf"),
    cpu_s=UNLIMITED_CPU_S,
    memory_bytes=64 << 30,
    file_bytes=4 << 30,
    open_files=4096,
    processes=4096,
    stdout_bytes=0,
    stderr_bytes=0,
    tmp_bytes=SERVER_TMP_BYTES,
)
STOP_GRACE_S = 1.0  # how long ``close`` lets an idle server exit on its own
BASE_PROCS = 4  # bwrap, sh (pid 1), the server itself, and one zombie of slack


class ServerDied(RuntimeError):
    """The fork server vanished or stopped answering."""


class ServerHost(LeaseHost, Protocol):
    """What the fork servers need of their backend (``BwrapSandbox`` is one): a lease host
    that also runs the jobs the fast path does not take, and names its mechanisms."""

    def run(self, job: Job) -> Result: ...

    def open_process(self, job: Job) -> LiveProcess: ...

    def mechanisms(self) -> dict[str, str]: ...

    @property
    def python_executable(self) -> str: ...


class PythonForkServer:
    """One warm sandboxed interpreter; runs one job at a time (not thread-safe on its own)."""

    def __init__(
        self,
        sandbox: ServerHost,
        uid: int,
        *,
        tmp_bytes: int = SERVER_TMP_BYTES,
        readonly_files: Mapping[str, str | bytes] | None = None,
        warm: tuple[str, ...] = WARM_PYTEST,
        stats: PoolStats | None = None,
    ) -> None:
        """``readonly_files`` are mounted for every job; ``warm``: what the server imports
        before its first job (``pytest``, and paths of ``readonly_files`` that are modules);
        ``stats``: where its start-ups and jobs are counted."""
        self._stats = PoolStats() if stats is None else stats
        self._server_cpu_s = 0.0  # the server's own CPU at its last answer
        self._sb = sandbox
        self.uid = uid
        self._tmp_bytes = tmp_bytes
        self._readonly = dict(readonly_files or {})
        self._warm = warm
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._cg: JobCgroup | None = None

    def start(self) -> None:
        script = f"{pyenv.SITE_MOUNT}/_server_main.py"
        limits = Limits(**{**asdict(SERVER_LIMITS), "tmp_bytes": self._tmp_bytes})
        job = Job(
            argv=("python", script, str(BASE_PROCS), *self._warm),
            limits=limits,
            policy=Policy(readonly_files=self._readonly),
        )
        host = self._sb.cgroup_host
        if host is not None:  # one cgroup per server; its limits are set before each job
            self._cg = host.create()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        begun = time.monotonic()
        with theirs, self._sb.command(job, self.uid, cgroup=self._cg) as (argv, fds):
            self._proc = subprocess.Popen(
                argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=subprocess.DEVNULL,
                env={},
                pass_fds=fds,
                start_new_session=True,
            )
        hello = self._recv(time.monotonic() + 30.0)
        if not hello.get("ready"):
            raise ServerDied(f"fork server failed to start: {hello}")
        self._server_cpu_s = float(hello.get("server_cpu_s", 0.0))
        self._stats.started(time.monotonic() - begun, self._server_cpu_s)

    def stop(self, grace_s: float = 0.0) -> None:
        """End the server: with ``grace_s``, let it exit on its own first (it does when its
        socket closes; its CPU then counts in this process's ``RUSAGE_CHILDREN``), then kill
        whatever is left."""
        proc, self._proc = self._proc, None
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        if proc is None:
            return
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        cg, self._cg = self._cg, None
        if cg is not None:
            cg.close()

    def restart(self) -> None:
        self.stop()
        if os.geteuid() == 0:
            reap_uid(self.uid)
        self.start()

    def _send(self, obj: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        assert self._sock is not None
        body = json.dumps(obj).encode()
        frame = struct.pack(">I", len(body)) + body
        try:
            sent = socket.send_fds(self._sock, [frame], list(fds)) if fds else 0
            self._sock.sendall(frame[sent:])
        except OSError as exc:
            raise ServerDied(str(exc)) from exc

    def _recv(self, deadline: float) -> dict[str, Any]:
        assert self._sock is not None
        fd = self._sock.fileno()
        head = _read_n(fd, 4, deadline)
        body = _read_n(fd, struct.unpack(">I", head)[0], deadline)
        out: dict[str, Any] = json.loads(body)
        if "cpu_s" in out and "server_cpu_s" in out:  # a job's answer
            used = out["server_cpu_s"] - self._server_cpu_s
            self._server_cpu_s = out["server_cpu_s"]
            self._stats.ran(out["cpu_s"], used)
        return out

    def run(self, job: Job) -> Result:
        if self._proc is None or self._proc.poll() is not None:
            self.restart()
        lim = job.limits
        files = {
            safe_relpath(k): base64.b64encode(as_bytes(v)).decode() for k, v in job.files.items()
        }
        env = {**BASE_ENV, "PYTHONPATH": pyenv.SITE_MOUNT, **job.policy.env}
        req = {
            "argv": list(job.argv),
            "files": files,
            "env": env,
            "stdin": _b64(job.stdin),
            "limits": self._limit_job(lim),
        }
        cg = self._cg
        before = cg.usage() if cg is not None else None
        start = time.monotonic()
        try:
            self._send(req)
            resp = self._recv(start + lim.wall_s + BACKSTOP_S)
        except ServerDied:
            oom = cg is not None and before is not None and _grew(cg, before).oom_kills > 0
            self.restart()
            lost = _lost(start, lim, timed_out=time.monotonic() - start >= lim.wall_s)
            return replace(lost, limit_hit="memory") if oom and not lost.timed_out else lost
        if "error" in resp:
            self.restart()
            return bad_job_result(f"fork server error: {resp['error']}")
        out, err = base64.b64decode(resp["stdout"]), base64.b64decode(resp["stderr"])
        used = _grew(cg, before) if cg is not None and before is not None else None
        return make_result(
            resp["status"],
            stdout=out,
            stderr=err,
            stdout_truncated=resp["stdout_seen"] > lim.stdout_bytes,
            stderr_truncated=resp["stderr_seen"] > lim.stderr_bytes,
            timed_out=resp["timed_out"],
            output_killed=resp["output_killed"],
            wall_s=time.monotonic() - start,
            cpu_s=resp["cpu_s"] if used is None or used.cpu_s is None else used.cpu_s,
            limits=lim,
            shell_style=False,
            cgroup_hit="memory" if used is not None and used.oom_kills else None,
            pids_refused=used is not None and used.pids_refused > 0,
        )

    def open_live(self, job: Job, done: Callable[[], None]) -> ForkedProcess:
        """Fork ``job`` with pipes to this host (see the module doc); ``done`` runs once the
        job has been killed and the server wiped, when the process is finished."""
        if self._proc is None or self._proc.poll() is not None:
            self.restart()
        files = {
            safe_relpath(k): base64.b64encode(as_bytes(v)).decode() for k, v in job.files.items()
        }
        req = {
            "live": True,
            "argv": list(job.argv),
            "files": files,
            "env": {**BASE_ENV, "PYTHONPATH": pyenv.SITE_MOUNT, **job.policy.env},
            "stdin": "",
            "limits": self._limit_job(job.limits),
        }
        try:
            return self._send_live(req, done)
        except ServerDied:  # found dead when the job was sent (killed while idle): it never
            self.restart()  # saw the job, so the job goes once more, to a fresh server
        try:
            return self._send_live(req, done)
        except ServerDied as exc:
            self.restart()
            raise SandboxUnavailable(f"fork server lost: {exc}") from exc

    def _send_live(self, req: dict[str, Any], done: Callable[[], None]) -> ForkedProcess:
        """Send one live job with its two pipes; the host keeps their other ends."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            self._send(req, (in_r, out_w))
        except ServerDied:
            os.close(in_w)
            os.close(out_r)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        return ForkedProcess(self, in_w, out_r, done)

    def end_live(self) -> tuple[int | None, bytes]:
        """Have the server kill the live job and wipe; the job's exit code (negative: killed
        by that signal; None: the server was lost and restarted) and its stderr."""
        try:
            self._send({"stop": True})
            resp = self._recv(time.monotonic() + BACKSTOP_S)
        except ServerDied:
            with contextlib.suppress(ServerDied, OSError):
                self.restart()
            return None, b""
        if "error" in resp:
            with contextlib.suppress(ServerDied, OSError):
                self.restart()
            return None, b""
        return os.waitstatus_to_exitcode(resp["status"]), base64.b64decode(resp["stderr"])

    def _limit_job(self, lim: Limits) -> dict[str, Any]:
        """The rlimits the server applies in the job's child. With a cgroup, the server's
        cgroup gets room for this job on top of what the idle server uses, and the child skips
        RLIMIT_AS (memory) and RLIMIT_NPROC (processes)."""
        sent: dict[str, Any] = asdict(lim)
        cg = self._cg
        if cg is None:
            return sent
        if cg.host.has("memory"):
            cg.set_limits(memory_bytes=cg.memory_current() + lim.memory_bytes)
            sent["memory_bytes"] = None
        if cg.host.has("pids"):
            cg.set_limits(pids=cg.pids_current() + lim.processes)
            sent["processes"] = None
        return sent


class ForkedProcess:
    """A live job forked by a warm server (``LiveProcess``): the host's ends of its stdin and
    stdout; ``stderr`` is filled in by ``finish``."""

    def __init__(
        self, server: PythonForkServer, stdin_fd: int, stdout_fd: int, done: Callable[[], None]
    ) -> None:
        self._server = server
        self._fds = (stdin_fd, stdout_fd)
        self._done = done
        self._lock = threading.Lock()
        self._code: int | None = None
        self._finished = False
        self.stderr = bytearray()

    @property
    def stdin_fd(self) -> int:
        return self._fds[0]

    @property
    def stdout_fd(self) -> int:
        return self._fds[1]

    def finish(self) -> int | None:
        """Kill the job and everything it started, wipe its files, free the server."""
        with self._lock:
            if self._finished:
                return self._code
            self._finished = True
            try:
                for fd in self._fds:
                    os.close(fd)
                self._code, err = self._server.end_live()
                self.stderr += err
            finally:
                self._done()
            return self._code


def _grew(cg: JobCgroup, before: CgroupUsage) -> CgroupUsage:
    """What the cgroup used since ``before`` (one job on a warm server)."""
    now = cg.usage()
    cpu = None if now.cpu_s is None or before.cpu_s is None else now.cpu_s - before.cpu_s
    return CgroupUsage(
        cpu_s=cpu,
        memory_peak_bytes=now.memory_peak_bytes,
        oom_kills=now.oom_kills - before.oom_kills,
        pids_refused=now.pids_refused - before.pids_refused,
    )


def _lost(start: float, limits: Limits, *, timed_out: bool) -> Result:
    """The server died or hung mid-job (e.g. the job killed it): report a SIGKILL."""
    return Result(
        exit_code=None,
        signal=int(signal.SIGKILL),
        stdout=b"",
        stderr=b"sandbox: fork server lost\n",
        stdout_truncated=False,
        stderr_truncated=False,
        timed_out=timed_out,
        limit_hit=None,
        wall_s=time.monotonic() - start,
        cpu_s=0.0,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _read_n(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise ServerDied("fork server did not answer before the deadline")
        try:
            chunk = os.read(fd, n - len(buf))
        except OSError as exc:  # the server's end of the socket was reset
            raise ServerDied(str(exc)) from exc
        if not chunk:
            raise ServerDied("fork server exited")
        buf += chunk
    return bytes(buf)


class PythonPool(Sandbox):
    """``size`` warm fork servers behind the ``Sandbox`` interface (thread-safe).

    Python jobs (``argv[0] == "python"``, ``policy.python``, no ``readonly_paths``, and only
    those ``readonly_files`` that every server mounts: the pool's ``readonly_files``, same
    content) take the fast path; anything else runs on the cold bwrap backend with identical
    semantics. The tmpfs sizes of ``/job`` and ``/tmp`` are fixed per server (``tmp_bytes``),
    not per job. ``size`` servers start at once; up to ``max_size`` are started when every
    server is busy (each holds a uid slot until ``close``). ``stats`` counts the servers'
    start-ups and their jobs' CPU (``PoolStats``), and outlives ``close``.
    """

    name = "bwrap-forkserver"
    isolates = True

    def __init__(
        self,
        sandbox: ServerHost,
        size: int = 1,
        tmp_bytes: int = SERVER_TMP_BYTES,
        *,
        max_size: int | None = None,
        readonly_files: Mapping[str, str | bytes] | None = None,
        warm: tuple[str, ...] = WARM_PYTEST,
    ) -> None:
        self._sb = sandbox
        self._tmp_bytes = tmp_bytes
        self._readonly = {path: as_bytes(data) for path, data in (readonly_files or {}).items()}
        self._warm = warm
        self._max = max(size, max_size or size)
        self._free: queue.SimpleQueue[PythonForkServer] = queue.SimpleQueue()
        self._all: list[PythonForkServer] = []
        self._lock = threading.Lock()
        self._count = 0
        self.stats = PoolStats()
        for _ in range(size):
            self._count += 1
            self._free.put(self._new_server())

    def _new_server(self) -> PythonForkServer:
        uid = self._sb.slots.acquire()
        server = PythonForkServer(
            self._sb,
            uid,
            tmp_bytes=self._tmp_bytes,
            readonly_files=self._readonly,
            warm=self._warm,
            stats=self.stats,
        )
        try:
            server.start()
        except BaseException:
            server.stop()
            self._sb.slots.release(uid)
            raise
        with self._lock:
            self._all.append(server)
        return server

    def _take(self) -> PythonForkServer:
        """A free server; a new one while fewer than ``max_size`` exist; else wait for one."""
        with contextlib.suppress(queue.Empty):
            return self._free.get_nowait()
        with self._lock:
            grow = self._count < self._max
            self._count += grow
        if not grow:
            return self._free.get()
        try:
            return self._new_server()
        except BaseException:
            with self._lock:
                self._count -= 1
            raise

    def fits(self, job: Job) -> bool:
        """Whether ``job`` takes the fast path (see the class doc)."""
        pol = job.policy
        mounted = all(
            self._readonly.get(path) == as_bytes(data) for path, data in pol.readonly_files.items()
        )
        return (
            bool(job.argv)
            and job.argv[0] == "python"
            and pol.python
            and mounted
            and (not pol.readonly_paths)
        )

    def open_process(self, job: Job) -> LiveProcess:
        """A live job forked by a warm server (fast path), else a cold sandboxed process."""
        if not self.fits(job):
            return self._sb.open_process(job)
        try:
            server = self._take()
        except ServerDied as exc:
            raise SandboxUnavailable(str(exc)) from exc
        try:
            return server.open_live(job, lambda: self._free.put(server))
        except BaseException:
            self._free.put(server)
            raise

    def run(self, job: Job) -> Result:
        if not self.fits(job):
            return self._sb.run(job)
        server = self._take()
        try:
            return server.run(job)
        except BadJob as exc:
            return bad_job_result(str(exc))
        finally:
            self._free.put(server)

    def mechanisms(self) -> dict[str, str]:
        """As the bwrap sandbox's, except CPU: each process's RLIMIT_CPU (the server's cgroup
        accounts a job's CPU, but nothing polls it while the job runs)."""
        return {**self._sb.mechanisms(), "cpu": "rlimit"}

    @property
    def python_executable(self) -> str:
        return self._sb.python_executable

    @property
    def uids(self) -> list[int]:
        """The sandbox uids held by this pool's servers (one per server)."""
        return [server.uid for server in self._all]

    def close(self) -> None:
        for server in self._all:
            server.stop(grace_s=STOP_GRACE_S)
            self._sb.slots.release(server.uid)
        self._all = []

    def __enter__(self) -> PythonPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
