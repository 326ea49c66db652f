"""Docker backend: each job is one ``exec`` of a root supervisor in a locked-down container.

Containers (``container_config``, a pure function) have no network, a read-only root, tmpfs
``/tmp``, ``/job`` and ``/dev/shm``, ``docker-init`` as pid 1, every capability dropped but
the supervisor's three, ``no-new-privileges`` and the engine's default seccomp profile. The
job runs as uid 65534. Its memory and process limits are the container's cgroup limits, set
to the job's own values before it runs (``docker update`` when they differ). CPU time is
capped for the job as a whole by the supervisor's watcher polling the container's cgroup
counter (one job per container at a time, so its delta is the job's), with ``RLIMIT_CPU``
per process as a backstop and the only CPU limit where the counter cannot be read; file size
and open files are rlimits; the wall deadline is the watcher's. Files travel in a tar on the
exec's stdin (see ``launch``).

``reuse=True`` (default) keeps warm containers: after every job the supervisor kills every
process of the job uid and wipes what the job could write, and a container whose cleanup
cannot be confirmed is destroyed. ``reuse=False`` starts a fresh container per job.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from rl_verifier_sandbox.api import BadJob, Job, Limits, Result, Sandbox, SandboxUnavailable
from rl_verifier_sandbox.backends import Options
from rl_verifier_sandbox.docker import launch, seccomp_profile
from rl_verifier_sandbox.docker.engine import (
    OWNER_LABEL,
    connect,
    engine_info,
    owner,
    reap_stale,
    require_image,
)
from rl_verifier_sandbox.docker.image import default_image, docker_module
from rl_verifier_sandbox.docker.layout import PROBE_SH, Layout, plan, ro_relative
from rl_verifier_sandbox.docker.result import from_report, lost
from rl_verifier_sandbox.docker.stream import Demux, PipeSink, feed_stdin, pump, raw_socket
from rl_verifier_sandbox.jobs.env import BASE_ENV
from rl_verifier_sandbox.jobs.files import as_bytes, safe_relpath
from rl_verifier_sandbox.jobs.result import bad_job_result

WORK_DIR = launch.WORK_DIR
UID = launch.JOB_UID
LABEL = "rl-verifier-sandbox"
BACKSTOP_S = 5.0  # past the job's deadline, a silent container is destroyed
FINISH_GRACE_S = 0.5  # a finished session's process may end itself at EOF before being killed
SESSION_GRACE_S = 30.0  # a session's own timer: a backstop well after the caller's deadline
REAP_SH = "U=$1\n" + launch.REAP_FUNCTION + "reap\n"

NO_PTYS = "ro,nosuid,nodev,noexec,size=4k,mode=0555"
_LIVE: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()
_CHECKED: set[str] = set()  # images a trivial job ran in, in this process
_SEEN_PATHS: dict[str, dict[str, str]] = {}  # image -> path -> how the job uid sees it


def container_config(
    image: str, limits: Limits, layout: Layout | None = None, *, owner: str = ""
) -> dict[str, Any]:
    """Keyword arguments for ``docker.containers.run`` enforcing the sandbox policy."""
    layout = layout or Layout()
    job_tmp = f"rw,nosuid,nodev,size={limits.tmp_bytes},uid={UID},gid={UID},mode=0700"
    root_tmp = {"SizeBytes": limits.tmp_bytes, "Mode": 0o755}
    mounts: list[dict[str, Any]] = [
        {"Type": "tmpfs", "Target": d, "TmpfsOptions": root_tmp} for d in layout.ro_dirs
    ]
    mounts += [
        {"Type": "bind", "Source": src, "Target": dst, "ReadOnly": True}
        for src, dst in layout.binds
    ]
    return {
        "image": image,
        "command": ["sleep", "infinity"],
        "init": True,
        "user": "0:0",
        "detach": True,
        "network_mode": "none",
        "read_only": True,
        # no PTYs: an empty read-only tmpfs replaces the engine's devpts, whose instances share
        # the kernel's pty limit (/dev/ptmx points into it)
        "tmpfs": {"/tmp": job_tmp, WORK_DIR: job_tmp, "/dev/pts": NO_PTYS},
        "mounts": mounts,
        "shm_size": limits.tmp_bytes,
        "working_dir": WORK_DIR,
        "hostname": "sandbox",
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,
        "pids_limit": limits.processes + launch.EXTRA_PIDS,
        "nano_cpus": 1_000_000_000,
        "cap_drop": ["ALL"],
        "cap_add": list(launch.CAPS),
        "security_opt": ["no-new-privileges", f"seccomp={seccomp_profile.profile()}"],
        "ulimits": [{"name": "core", "soft": 0, "hard": 0}],
        "environment": {"PATH": BASE_ENV["PATH"]},
        "auto_remove": True,
        "labels": {LABEL: "1", OWNER_LABEL: owner},
    }


Key = tuple[Layout, int]  # containers are interchangeable for jobs with the same key


@dataclass
class _Box:
    """One container and the cgroup limits it has now."""

    id: str
    key: Key
    memory: int
    pids: int


@dataclass(frozen=True)
class _Prepared:
    key: Key
    command: list[str]
    nonce: str
    payload: bytes
    limits: Limits


def open_sandbox(options: Options) -> DockerSandbox:
    """The backend table's opener: a checked docker sandbox on ``options.image`` (default:
    ``$RLV_SANDBOX_IMAGE`` or the image ``rlv sandbox image build`` makes)."""
    docker = DockerSandbox(options.image)
    try:
        docker.check()
    except BaseException:
        docker.close()
        raise
    return docker


class DockerSandbox(Sandbox):
    """Locked-down containers, one job at a time each; warm unless ``reuse=False``.

    A job takes an idle container of its mount layout or starts one (never waits: the caller
    bounds concurrency); at most ``max_idle`` clean containers are kept warm, the oldest
    going first."""

    name = "docker"
    isolates = True

    def __init__(
        self,
        image: str | None = None,
        *,
        reuse: bool = True,
        max_idle: int | None = None,
        client: Any = None,
    ) -> None:
        self.image = image or default_image()
        self.reuse = reuse
        self._client = client if client is not None else connect()
        self._api: Any = self._client.api
        require_image(self._client, self.image)
        self._max_idle = max_idle or 4 * (os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._idle: list[_Box] = []  # oldest first
        self._all: dict[str, _Box] = {}
        self._closed = False
        self._seen_paths = _SEEN_PATHS.setdefault(self.image, {})
        self._cpu_watched: bool | None = None  # the last report's: CPU capped by the cgroup
        self._owner = owner()
        reap_stale(self._client)
        _LIVE.add(self)

    # -- public --------------------------------------------------------------------------

    def check(self) -> None:
        """Raise SandboxUnavailable with the reason if a trivial job cannot run (once per
        image and process)."""
        if self.image in _CHECKED:
            return
        res = self.run(Job(argv=("true",)))
        if res.exit_code != 0:
            err = res.stderr.decode(errors="replace").strip()[-300:]
            raise SandboxUnavailable(f"a trivial job failed in {self.image}: {err}")
        _CHECKED.add(self.image)

    def mechanisms(self) -> dict[str, str]:
        """What enforces each limit (the keys of ``BwrapSandbox.mechanisms``); for CPU, what
        the supervisor of the last job here reported (a trivial job runs first if none has)."""
        engine = engine_info(self._client)
        cgroup = f"cgroup-v{engine.get('CgroupVersion') or '1'}"
        if self._cpu_watched is None:
            self.run(Job(argv=("true",)))
        return {
            "memory": cgroup,
            "processes": cgroup,
            "cpu": cgroup if self._cpu_watched else "rlimit",
            "file_size": "rlimit",
            "open_files": "rlimit",
            "output": "host",
            "wall": "supervisor",
            "cleanup": "supervisor",
            "environment": "host",
            "uid": "setpriv",
            "network": "namespace",
            "filesystem": "namespace",
            "syscalls": "seccomp",
        }

    def run(self, job: Job) -> Result:
        try:
            prepared = self._prepare(job)
        except BadJob as exc:
            return bad_job_result(str(exc))
        for attempt in (1, 2):  # a container that died while idle: once more, in a new one
            box = self._acquire(prepared)
            try:
                sock = self._start_exec(box, prepared.command)
            except Exception as exc:  # the engine refused: nothing ran yet
                self._discard(box)
                if attempt == 2:
                    raise SandboxUnavailable(f"docker exec failed: {exc}") from exc
                continue
            try:
                result, healthy = self._execute(box, sock, prepared)
            except BaseException:
                self._discard(box)
                raise
            self._release(box) if healthy and self.reuse else self._discard(box)
            return result
        raise AssertionError("unreachable")

    def open_process(self, job: Job) -> DockerSession:
        return self.open_session(job)

    def open_session(self, job: Job) -> DockerSession:
        """Start ``job`` with live pipes (the two-process relay); the caller enforces the
        deadline and must call ``finish``."""
        try:
            prepared = self._prepare(job, timer_s=job.limits.wall_s + SESSION_GRACE_S)
        except BadJob as exc:
            raise SandboxUnavailable(f"bad job: {exc}") from exc
        box = self._acquire(prepared)
        try:
            return DockerSession(self, box, prepared)
        except SandboxUnavailable:
            self._discard(box)
            raise
        except Exception as exc:
            self._discard(box)
            raise SandboxUnavailable(f"cannot start a docker session: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            boxes = list(self._all.values())
            self._idle.clear()
        killers = [threading.Thread(target=self._kill, args=(box,)) for box in boxes]
        for thread in killers:
            thread.start()
        for thread in killers:
            thread.join()

    # -- jobs ----------------------------------------------------------------------------

    def _prepare(self, job: Job, *, timer_s: float | None = None) -> _Prepared:
        if not job.argv:
            raise BadJob("empty argv")
        files = {safe_relpath(k): as_bytes(v) for k, v in job.files.items()}
        ro = {path: as_bytes(data) for path, data in job.policy.readonly_files.items()}
        layout = plan(ro, job.policy.readonly_paths, self._probe)
        argv = list(job.argv)
        if argv[0] == "python":
            argv[0] = "python3"
        env = {**BASE_ENV, **job.policy.env}
        timer = job.limits.wall_s if timer_s is None else timer_s
        command = launch.command(argv, env, job.limits, layout.ro_dirs, timer)
        ro_tar = launch.tar_of(ro_relative(ro), mode=0o444, uid=0)
        job_tar = launch.tar_of(files, mode=0o644, uid=UID)
        nonce, payload = launch.stdin_payload(ro_tar, job_tar, job.stdin)
        return _Prepared((layout, job.limits.tmp_bytes), command, nonce, payload, job.limits)

    def _execute(self, box: _Box, sock: socket.socket, prepared: _Prepared) -> tuple[Result, bool]:
        limits = prepared.limits
        start = time.monotonic()
        threading.Thread(
            target=feed_stdin, args=(sock, prepared.payload), kwargs={"close": True}, daemon=True
        ).start()
        demux = Demux(limits)
        try:
            ended = pump(sock, demux, start + limits.wall_s + BACKSTOP_S, lambda: self._reap(box))
        finally:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the stdin feeder, if still writing
            sock.close()
        wall = time.monotonic() - start
        parsed = launch.parse_report(bytes(demux.stderr.tail), prepared.nonce) if ended else None
        if parsed is None:
            return lost(demux, limits, wall), False
        report, length = parsed
        self._cpu_watched = report.cpu_capped is not None
        return from_report(demux, report, length, limits, wall), report.clean

    def _start_exec(self, box: _Box, command: list[str]) -> socket.socket:
        exec_id = self._api.exec_create(box.id, command, stdin=True, user="0:0")["Id"]
        return raw_socket(self._api.exec_start(exec_id, socket=True))

    def _reap(self, box: _Box) -> None:
        """Kill every process of the job uid now (output flood, end of a session). Where that
        exec cannot start (a fork bomb holds every pid), the container is destroyed."""
        cmd = ["/bin/sh", "-c", REAP_SH, "rlv-reap", str(UID)]
        try:
            exec_id = self._api.exec_create(box.id, cmd, user="0:0")["Id"]
            self._api.exec_start(exec_id)
            if self._api.exec_inspect(exec_id).get("ExitCode") == 0:
                return
        except Exception:  # noqa: BLE001 - any failure: fall back to destroying it
            pass
        self._kill(box)

    def _probe(self, paths: list[str]) -> dict[str, str]:
        """How the job uid sees each path in the image (see ``layout``); cached."""
        unknown = [p for p in paths if p not in self._seen_paths]
        if unknown:
            box = self._acquire(_Prepared((Layout(), Limits().tmp_bytes), [], "", b"", Limits()))
            try:
                cmd = ["/bin/sh", "-c", PROBE_SH, "rlv-probe", *unknown]
                exec_id = self._api.exec_create(box.id, cmd, user=f"{UID}:{UID}")["Id"]
                answers = self._api.exec_start(exec_id).decode().split()
            except BaseException:
                self._discard(box)
                raise
            self._release(box)
            if len(answers) != len(unknown):
                raise SandboxUnavailable(f"probing paths in {self.image} failed: {answers}")
            self._seen_paths.update(zip(unknown, answers, strict=True))
        return {p: self._seen_paths[p] for p in paths}

    # -- containers ----------------------------------------------------------------------

    def _acquire(self, prepared: _Prepared) -> _Box:
        key, limits = prepared.key, prepared.limits
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the docker sandbox is closed")
            box = next((b for b in reversed(self._idle) if b.key == key), None)
            if box is not None:
                self._idle.remove(box)
        if box is None:
            return self._start(key, limits)
        try:
            self._fit(box, limits)
        except Exception:  # noqa: BLE001 - e.g. memory below what is in use: start afresh
            self._discard(box)
            return self._start(key, limits)
        return box

    def _start(self, key: Key, limits: Limits) -> _Box:
        docker = docker_module()
        config = container_config(self.image, limits, key[0], owner=self._owner)
        try:
            container = self._client.containers.run(**config)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"cannot start a container of {self.image}: {exc}") from exc
        box = _Box(container.id, key, limits.memory_bytes, limits.processes + launch.EXTRA_PIDS)
        with self._lock:
            self._all[box.id] = box
            closed = self._closed
        if closed:
            self._kill(box)
            raise SandboxUnavailable("the docker sandbox is closed")
        return box

    def _fit(self, box: _Box, limits: Limits) -> None:
        """Give the container this job's memory and process limits."""
        pids = limits.processes + launch.EXTRA_PIDS
        if (box.memory, box.pids) == (limits.memory_bytes, pids):
            return
        mem = limits.memory_bytes
        res = self._api._post_json(
            self._api._url("/containers/{0}/update", box.id),
            data={"Memory": mem, "MemorySwap": mem, "PidsLimit": pids},
        )
        self._api._raise_for_status(res)
        box.memory, box.pids = mem, pids

    def _release(self, box: _Box) -> None:
        """Keep ``box`` warm (dropping the oldest beyond ``max_idle``), or destroy it."""
        with self._lock:
            if self._closed or not self.reuse or box.id not in self._all:
                drop = [box]
            else:
                self._idle.append(box)
                drop, self._idle = self._idle[: -self._max_idle], self._idle[-self._max_idle :]
        for old in drop:
            self._discard(old)

    def _discard(self, box: _Box) -> None:
        self._kill(box)
        with self._lock:
            self._all.pop(box.id, None)

    def _kill(self, box: _Box) -> None:
        with contextlib.suppress(Exception):  # already gone is fine
            self._api.kill(box.id)


class DockerSession:
    """A running docker job with live pipes: write ``stdin_fd``, read ``stdout_fd``."""

    def __init__(self, sandbox: DockerSandbox, box: _Box, prepared: _Prepared) -> None:
        self._sandbox, self._box, self._prepared = sandbox, box, prepared
        sandbox._fit(box, prepared.limits)
        self._sock = sandbox._start_exec(box, prepared.command)
        self._sink = PipeSink()
        self._demux = Demux(prepared.limits, self._sink)
        self.stderr = bytearray()
        self._ended = False
        feed_stdin(self._sock, prepared.payload, close=False)
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    @property
    def stdin_fd(self) -> int:
        fd: int = self._sock.fileno()
        return fd

    @property
    def stdout_fd(self) -> int:
        return self._sink.read_fd

    def _pump(self) -> None:
        deadline = time.monotonic() + self._prepared.limits.wall_s + SESSION_GRACE_S + BACKSTOP_S
        try:
            self._ended = pump(self._sock, self._demux, deadline, self.kill)
        finally:
            self._sink.close_writer()

    def kill(self) -> None:
        self._sandbox._reap(self._box)

    def finish(self) -> int | None:
        """Kill what is left, collect the report, give the container back; the exit
        status (None when it is unknown)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        self._thread.join(FINISH_GRACE_S)  # most processes end on their own at EOF
        if self._thread.is_alive():
            self.kill()
            self._thread.join(3.0)
        if self._thread.is_alive():
            self._sandbox._kill(self._box)
            self._thread.join(3.0)
        self._sink.close_reader()
        with contextlib.suppress(OSError):
            self._sock.close()
        tail = bytes(self._demux.stderr.tail)
        parsed = launch.parse_report(tail, self._prepared.nonce) if self._ended else None
        if parsed is None:
            self.stderr[:] = self._demux.stderr.head[: self._demux.stderr.cap]
            self._sandbox._discard(self._box)
            return None
        report, length = parsed
        self._sandbox._cpu_watched = report.cpu_capped is not None
        self.stderr[:] = self._demux.stderr.without_suffix(length)[0]
        if report.clean and self._sandbox.reuse:
            self._sandbox._release(self._box)
        else:
            self._sandbox._discard(self._box)
        return report.status


@atexit.register
def _close_all() -> None:
    for sandbox in list(_LIVE):
        with contextlib.suppress(Exception):
            sandbox.close()
