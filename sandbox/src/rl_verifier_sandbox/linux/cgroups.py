"""Per-job cgroups: a resident-memory limit, a pids limit and CPU accounting for one job.

``host_cgroups()`` finds what this host allows, once: cgroup v2 when its mount has the memory
and pids controllers, else v1 (the memory and pids hierarchies, plus cpu and cpuacct where
mounted). v1 job cgroups are made inside the caller's own cgroup of each hierarchy, so limits
above the caller still apply; v2 job cgroups are leaves under the mount's root (the only place
a v2 cgroup with processes may have controllers enabled). Without root, or with a read-only
cgroupfs, it returns None and ``unavailable_reason()`` says why; the sandbox then keeps rlimits.

A process joins a cgroup through ``enter_argv()``: a tiny ``/bin/sh`` prefix, still running as
the caller, moves itself into the cgroup (writes ``0`` into ``tasks`` on v1, ``cgroup.procs`` on
v2) and then ``exec``s the rest of the command line, so everything the job later starts is
inside before it can run any code.
Job cgroups are named ``rlv-<host pid>-<n>``; ``close()`` kills what is left and removes them,
and directories left by a host process that died are removed the first time cgroups are used.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from rl_verifier_sandbox.linux.pids import pid_alive

log = logging.getLogger(__name__)

ENV = "RLV_SANDBOX_CGROUP"  # auto (default), v2, v1 or off
PREFIX = "rlv-"
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
V2_CONTROLLERS = ("memory", "pids", "cpu")
REQUIRED = ("memory", "pids")
# $1 ...: the files to write "0" (this very process) into, then "--" and the command to exec.
ENTER_SCRIPT = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"'
_names = itertools.count()


@dataclass(frozen=True)
class CgroupUsage:
    """What a job cgroup has used so far (None where this host does not account it)."""

    cpu_s: float | None  # user + system CPU of every process that was ever in it
    memory_peak_bytes: int | None
    oom_kills: int  # processes the kernel killed at the memory limit
    pids_refused: int  # forks refused at the pids limit


@dataclass(frozen=True)
class CgroupHost:
    """Where and how job cgroups are made on this host."""

    version: str  # "v1" or "v2"
    parents: Mapping[str, str]  # controller -> directory job cgroups are made in

    @property
    def mechanism(self) -> str:
        return f"cgroup-{self.version}"

    def has(self, controller: str) -> bool:
        return controller in self.parents

    def create(self, *, memory_bytes: int | None = None, pids: int | None = None) -> JobCgroup:
        """A new, empty job cgroup with these limits (None: no limit)."""
        cg = JobCgroup(self, f"{PREFIX}{os.getpid()}-{next(_names)}")
        try:
            cg.set_limits(memory_bytes=memory_bytes, pids=pids)
        except BaseException:
            cg.close()
            raise
        return cg


class JobCgroup:
    """One job's cgroup (a directory per v1 hierarchy, one directory on v2)."""

    def __init__(self, host: CgroupHost, name: str, *, existing: bool = False) -> None:
        """Make the directories (``existing``: adopt those already there, for cleanup)."""
        self.host = host
        self.name = name
        self.dirs = {ctl: os.path.join(parent, name) for ctl, parent in host.parents.items()}
        self._unique = list(dict.fromkeys(self.dirs.values()))
        self._lock = threading.Lock()
        self._final: CgroupUsage | None = None
        self._closed = False
        if existing:
            self._unique = [d for d in self._unique if os.path.isdir(d)]
            return
        made: list[str] = []
        try:
            for d in self._unique:
                os.mkdir(d)
                made.append(d)
        except OSError:
            for d in made:
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            raise
        if host.version == "v2":
            with contextlib.suppress(OSError):
                _write(self._file("memory", "memory.oom.group"), "1")  # an OOM kills the job

    def _file(self, controller: str, name: str) -> str:
        """``name`` in the controller's directory (any of ours when the host lacks it: then
        the file does not exist and reads as absent)."""
        return os.path.join(self.dirs.get(controller, self._unique[0]), name)

    def enter_argv(self) -> list[str]:
        """Prefix for a command line: the process joins this cgroup, then execs the rest.

        On v1 the (single-threaded) shell moves its own thread through ``tasks``: the kernel
        then skips the global lock that moving a whole process through ``cgroup.procs``
        takes, whose RCU grace period cost ~8 ms per job here under load."""
        name = "cgroup.procs" if self.host.version == "v2" else "tasks"
        return ["/bin/sh", "-c", ENTER_SCRIPT, "sh", *(f"{d}/{name}" for d in self._unique), "--"]

    def set_limits(self, *, memory_bytes: int | None = None, pids: int | None = None) -> None:
        """Resident memory (RAM + swap, page cache reclaimable) and task limits."""
        v2 = self.host.version == "v2"
        if memory_bytes is not None and "memory" in self.dirs:
            if v2:
                _write(self._file("memory", "memory.max"), str(memory_bytes))
                _write_optional(self._file("memory", "memory.swap.max"), "0")
            else:
                self._set_v1_memory(memory_bytes)
        if pids is not None and "pids" in self.dirs:
            _write(self._file("pids", "pids.max"), str(pids))

    def _set_v1_memory(self, limit: int) -> None:
        mem = self._file("memory", "memory.limit_in_bytes")
        memsw = self._file("memory", "memory.memsw.limit_in_bytes")
        if not os.path.exists(memsw):  # no swap accounting
            _write(mem, str(limit))
            return
        try:  # memsw must stay >= the RAM limit: lower RAM first, raise memsw first
            _write(mem, str(limit))
            _write(memsw, str(limit))
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            _write(memsw, str(limit))
            _write(mem, str(limit))

    def memory_current(self) -> int:
        name = "memory.current" if self.host.version == "v2" else "memory.usage_in_bytes"
        return int(_read(self._file("memory", name)))

    def pids_current(self) -> int:
        return int(_read(self._file("pids", "pids.current")))

    def usage(self) -> CgroupUsage:
        """Live usage; after ``close`` the usage read just before the cgroup was removed."""
        if self._final is not None:
            return self._final
        if self.host.version == "v2":
            cpu = _keyed(self._file("memory", "cpu.stat")).get("usage_usec")
            peak = _int_or_none(self._file("memory", "memory.peak"))
            oom = _keyed(self._file("memory", "memory.events")).get("oom_kill", 0)
            return CgroupUsage(
                cpu_s=None if cpu is None else cpu / 1e6,
                memory_peak_bytes=peak,
                oom_kills=oom,
                pids_refused=_keyed(self._file("pids", "pids.events")).get("max", 0),
            )
        cpu_ns = None
        if "cpuacct" in self.dirs:
            cpu_ns = _int_or_none(self._file("cpuacct", "cpuacct.usage"))
        return CgroupUsage(
            cpu_s=None if cpu_ns is None else cpu_ns / 1e9,
            memory_peak_bytes=_int_or_none(self._file("memory", "memory.max_usage_in_bytes")),
            oom_kills=_keyed(self._file("memory", "memory.oom_control")).get("oom_kill", 0),
            pids_refused=_keyed(self._file("pids", "pids.events")).get("max", 0),
        )

    @property
    def accounts_cpu(self) -> bool:
        return self.host.version == "v2" or "cpuacct" in self.dirs

    def cpu_s(self) -> float:
        """CPU seconds used so far by every process ever in the cgroup."""
        return self.usage().cpu_s or 0.0

    def procs(self) -> list[int]:
        pids: set[int] = set()
        for d in self._unique:
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in _read(os.path.join(d, "cgroup.procs")).split())
        return sorted(pids)

    def kill(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until none is left; False if some survived."""
        kill_file = os.path.join(self._unique[0], "cgroup.kill")
        end = time.monotonic() + timeout
        while True:
            pids = self.procs()
            if not pids:
                return True
            if time.monotonic() > end:
                return False
            if self.host.version == "v2" and os.path.exists(kill_file):
                with contextlib.suppress(OSError):
                    _write(kill_file, "1")
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    def close(self, timeout: float = 5.0) -> CgroupUsage | None:
        """Kill what is left, keep the final usage, remove the cgroup. Idempotent."""
        with self._lock:
            if self._closed:
                return self._final
            self._closed = True
            self.kill(timeout)
            with contextlib.suppress(OSError, ValueError):
                self._final = self.usage()
            end = time.monotonic() + timeout
            left = list(self._unique)
            while left:
                left = [d for d in left if not _rmdir(d)]
                if not left or time.monotonic() > end:
                    break
                self.kill(0.5)  # a process that joined after the first kill, or still exiting
                time.sleep(0.005)
            for d in left:
                log.warning("cannot remove cgroup %s: processes remain", d)
            return self._final

    def __enter__(self) -> JobCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _write(path: str, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _write_optional(path: str, value: str) -> None:
    if os.path.exists(path):
        _write(path, value)


def _int_or_none(path: str) -> int | None:
    try:
        return int(_read(path).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _keyed(path: str) -> dict[str, int]:
    """A flat-keyed cgroup file (``key value`` per line) as a dict; {} when absent."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in _read(path).splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
    return out


def _rmdir(path: str) -> bool:
    """Remove a cgroup directory; False while tasks still hold it."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            log.warning("cannot remove cgroup %s: %s", path, exc)
            return True
        return False
    return True


# --- finding the host's cgroups -------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """A cgroup filesystem mount: which cgroup its mountpoint shows, and its controllers."""

    root: str  # the cgroup path seen at the mountpoint
    point: str
    version: str  # "v1" or "v2"
    controllers: frozenset[str]  # v1: from the mount options; v2: filled from cgroup.controllers


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        fstype = fields[sep + 1]
        options = fields[sep + 3].split(",") if len(fields) > sep + 3 else []
        root, point = fields[3], fields[4].replace("\\040", " ")
        if fstype == "cgroup":
            mounts.append(Mount(root, point, "v1", frozenset(options) & set(V1_CONTROLLERS)))
        elif fstype == "cgroup2":
            mounts.append(Mount(root, point, "v2", frozenset()))
    return mounts


def parse_self_cgroup(text: str) -> dict[str, str]:
    """controller -> this process's cgroup path (v1); "" -> its v2 path."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for ctl in controllers.split(",") if controllers else [""]:
            out[ctl] = path
    return out


def _inside(mount: Mount, path: str) -> str | None:
    """The directory for cgroup ``path`` under ``mount``, or None if the mount cannot show it."""
    root = mount.root.rstrip("/")
    if path != mount.root and not path.startswith(root + "/"):
        return None
    return os.path.normpath(os.path.join(mount.point, path[len(root) :].lstrip("/")))


def v1_layout(mounts: list[Mount], own: Mapping[str, str]) -> tuple[CgroupHost | None, str]:
    parents: dict[str, str] = {}
    for ctl in V1_CONTROLLERS:
        for m in mounts:
            if m.version == "v1" and ctl in m.controllers and ctl in own:
                d = _inside(m, own[ctl])
                if d is not None and os.path.isdir(d):
                    parents[ctl] = d
                    break
    missing = [c for c in REQUIRED if c not in parents]
    if missing:
        return None, f"cgroup v1: no usable {'/'.join(missing)} hierarchy"
    return CgroupHost("v1", parents), ""


def v2_layout(mounts: list[Mount]) -> tuple[CgroupHost | None, str]:
    for m in mounts:
        if m.version != "v2":
            continue
        try:
            available = _read(os.path.join(m.point, "cgroup.controllers")).split()
        except OSError as exc:
            return None, f"cgroup v2 at {m.point}: {exc}"
        missing = [c for c in REQUIRED if c not in available]
        if missing:
            return None, f"cgroup v2 at {m.point} has no {'/'.join(missing)} controller"
        wanted = [c for c in V2_CONTROLLERS if c in available]
        control = os.path.join(m.point, "cgroup.subtree_control")
        try:
            enabled = _read(control).split()
            todo = " ".join(f"+{c}" for c in wanted if c not in enabled)
            if todo:
                _write(control, todo)
        except OSError as exc:
            return None, f"cgroup v2: cannot enable {' '.join(wanted)} at {m.point}: {exc}"
        return CgroupHost("v2", {c: m.point for c in wanted}), ""
    return None, "no cgroup v2 mount"


def _probe(host: CgroupHost) -> str:
    """Make a cgroup, run /bin/true inside it, remove it: '' or why that failed."""
    try:
        with host.create(memory_bytes=64 << 20, pids=16) as cg:
            res = subprocess.run(
                [*cg.enter_argv(), "/bin/true"], capture_output=True, timeout=10, check=False
            )
            if res.returncode != 0:
                return f"cannot join a {host.mechanism} cgroup: {res.stderr.decode().strip()}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot create a {host.mechanism} cgroup: {exc}"
    return ""


def sweep_stale(host: CgroupHost) -> int:
    """Remove job cgroups left by host processes that no longer exist; return how many."""
    removed = 0
    pattern = re.compile(rf"{re.escape(PREFIX)}(\d+)-\d+")
    for parent in dict.fromkeys(host.parents.values()):
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                match = pattern.fullmatch(name)
                if not match or pid_alive(int(match.group(1))):
                    continue
                JobCgroup(host, name, existing=True).close()
                removed += 1
    return removed


def _mode() -> str:
    return os.environ.get(ENV, "auto").strip().lower() or "auto"


@functools.cache
def detect(mode: str = "auto") -> tuple[CgroupHost | None, str]:
    """(how job cgroups are made here, or None; why not). Cached per mode."""
    if mode in ("off", "0", "no", "none"):
        return None, f"disabled ({ENV}={mode})"
    if mode not in ("auto", "v1", "v2"):
        return None, f"unknown {ENV}={mode!r} (auto, v2, v1 or off)"
    if os.geteuid() != 0:
        return None, "not root: job cgroups need write access to the cgroup filesystem"
    try:
        mounts = parse_mountinfo(_read("/proc/self/mountinfo"))
        own = parse_self_cgroup(_read("/proc/self/cgroup"))
    except OSError as exc:
        return None, f"cannot read /proc: {exc}"
    reasons = []
    for version in ("v2", "v1") if mode == "auto" else (mode,):
        host, why = v2_layout(mounts) if version == "v2" else v1_layout(mounts, own)
        if host is not None:
            why = _probe(host)
            if not why:
                sweep_stale(host)
                return host, ""
        reasons.append(why)
    return None, "; ".join(reasons)


def host_cgroups() -> CgroupHost | None:
    """How this host makes job cgroups (found once per process), or None: see
    ``unavailable_reason``. ``RLV_SANDBOX_CGROUP`` = auto (default), v2, v1 or off."""
    return detect(_mode())[0]


def unavailable_reason() -> str:
    """Why ``host_cgroups()`` is None ('' when it is not)."""
    return detect(_mode())[1]


__all__ = [
    "CgroupHost",
    "CgroupUsage",
    "JobCgroup",
    "host_cgroups",
    "unavailable_reason",
]
