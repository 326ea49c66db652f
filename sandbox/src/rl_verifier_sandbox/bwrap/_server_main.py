"""Fork server run INSIDE the bwrap sandbox (system Python, stdlib only + pytest warm-up).

Protocol on a unix socket (the server's stdin and stdout): frames of a 4-byte big-endian length +
JSON. Request keys: argv, files (name -> base64), stdin (base64), env, limits. Response: status
(raw wait status), stdout/stderr (base64, capped), stdout_seen/stderr_seen, timed_out,
output_killed, wall_s, cpu_s; every answer (and the first frame, ``ready``) also carries
server_cpu_s, the CPU the server has used itself so far.

A request with ``live`` set carries two fds (SCM_RIGHTS): the read end of the job's stdin and the
write end of its stdout, whose other ends the host keeps to talk with the job while it runs. The
server captures the job's stderr and answers only when the host sends ``{"stop": true}``: then
the job and everything it started are killed and the writable mounts wiped, as after any job.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import errno
import gc
import importlib
import json
import os
import resource
import runpy  # imported once here, not in every child that runs a script
import select
import shutil
import signal
import site
import socket
import struct
import sys
import time
import traceback
import types
from typing import Any

WORK, TMP, SHM, MQUEUE = "/job", "/tmp", "/dev/shm", "/dev/mqueue"
# Every mount a job can write to (``/`` and ``/dev`` are read-only): wiped after each job.
WRITABLE = (WORK, TMP, SHM, MQUEUE)
# SysV IPC objects live in the server's IPC namespace, not in a file system: removed too.
SYSV_IPC = {"shm": "shmctl", "sem": "semctl", "msg": "msgctl"}
IPC_RMID = 0
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
PY_FLAGS = {"-u", "-B", "-I", "-E", "-s", "-S", "-q", "-O", "-OO", "-b", "-bb"}
MAX_FDS = 2  # a live job's stdin and stdout
SITE_MOUNT = "/opt/rlv-site"  # pyenv.SITE_MOUNT: the server's PYTHONPATH


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once: each child calls prctl


def _prctl(option: int, value: int) -> None:
    _LIBC.prctl(option, value, 0, 0, 0)


# Warmed scripts compiled once (a job running one as ``python PATH`` skips compiling it):
# read-only mounts, fixed for the server's life, and out of the jobs' reach in its memory.
_COMPILED: dict[str, types.CodeType] = {}


def _warm(modules: list[str]) -> None:
    """Import each module before the first job: ``pytest`` with its default plugins, a
    read-only script by its path (from its folder, on ``sys.path`` only while it is imported,
    and compiled for jobs that run it), any other module by its name."""
    for path in modules:
        if path == "pytest":
            _warm_pytest()
            continue
        if "/" not in path:
            importlib.import_module(path)
            continue
        with open(path, "rb") as fh:
            _COMPILED[path] = compile(fh.read(), path, "exec")
        folder, name = os.path.split(path)
        sys.path.insert(0, folder)
        try:
            importlib.import_module(name.removesuffix(".py"))
        finally:
            sys.path.remove(folder)


def _warm_pytest() -> None:
    import pytest  # noqa: F401
    from _pytest.config import default_plugins

    for name in default_plugins:
        with contextlib.suppress(Exception):  # warm-up only
            importlib.import_module(f"_pytest.{name}")


def _read_frame(sock: socket.socket, fds: list[int]) -> dict[str, Any] | None:
    """The next frame; fds that came with it are appended to ``fds``."""
    head = _read_n(sock, 4, fds)
    if head is None:
        return None
    body = _read_n(sock, struct.unpack(">I", head)[0], fds)
    return None if body is None else json.loads(body)


def _read_n(sock: socket.socket, n: int, fds: list[int]) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk, got, _, _ = socket.recv_fds(sock, min(n - len(buf), 1 << 20), MAX_FDS)
        fds += got
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _write_frame(fd: int, obj: dict[str, Any]) -> None:
    body = json.dumps(obj).encode()
    data = memoryview(struct.pack(">I", len(body)) + body)
    while data:
        data = data[os.write(fd, data) :]


def _own_cpu_s() -> float:
    """CPU this server has used itself (its jobs are children: not counted)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _set_limits(lim: dict[str, Any], base_procs: int) -> None:
    def lower(res: int, soft: int, hard: int | None = None) -> None:
        _, cur_hard = resource.getrlimit(res)
        hard = soft if hard is None else hard
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(res, (soft, hard))

    cpu = max(1, int(lim["cpu_s"] + 0.999))
    lower(resource.RLIMIT_CPU, cpu, cpu + 1)
    if lim["memory_bytes"] is not None:  # None: the server's cgroup limits resident memory
        lower(resource.RLIMIT_AS, lim["memory_bytes"])
    lower(resource.RLIMIT_FSIZE, lim["file_bytes"])
    lower(resource.RLIMIT_NOFILE, lim["open_files"])
    lower(resource.RLIMIT_CORE, 0)
    if lim["processes"] is not None:  # None: the server's cgroup limits processes
        lower(resource.RLIMIT_NPROC, lim["processes"] + base_procs)


def _run_python(args: list[str]) -> None:
    i = 0
    while i < len(args) and args[i] in PY_FLAGS:
        i += 1
    _drop_site(set(args[:i]))
    rest = args[i:]
    sys.path[0] = WORK
    if not rest or rest[0] == "-":
        sys.argv = ["-", *rest[1:]] if rest else [""]
        exec(compile(sys.stdin.read(), "<stdin>", "exec"), {"__name__": "__main__"})
    elif rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    elif rest[0] == "-c":
        sys.argv = ["-c", *rest[2:]]
        exec(compile(rest[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(rest)
        sys.path[0] = os.path.dirname(os.path.abspath(rest[0]))
        code = _COMPILED.get(rest[0])
        if code is None:
            runpy.run_path(rest[0], run_name="__main__")
        else:
            _run_compiled(code, rest[0])


def _run_compiled(code: types.CodeType, path: str) -> None:
    """What ``runpy.run_path(path, run_name="__main__")`` does for a plain script, from its
    code compiled at warm-up."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__="")
    main.__spec__ = None
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _drop_site(flags: set[str]) -> None:
    """What ``-I`` (no PYTHONPATH, no user site) and ``-S`` (no site-packages) would have left
    out of a fresh interpreter: gone from ``sys.path``, and modules the warm-up imported from
    there gone from ``sys.modules``."""
    dropped: list[str] = []
    if "-I" in flags or "-E" in flags:
        dropped.append(SITE_MOUNT)
    if "-I" in flags or "-s" in flags:
        dropped.append(site.getusersitepackages())
    if "-S" in flags:
        dropped += [SITE_MOUNT, *site.getsitepackages()]
    if not dropped:
        return
    prefixes = tuple(dropped)
    sys.path[:] = [p for p in sys.path if not p.startswith(prefixes)]
    files = _MODULE_FILES if len(sys.modules) == len(_MODULE_FILES) else _module_files()
    for name, file in files:
        if file.startswith(prefixes):
            sys.modules.pop(name, None)


# The server's modules with their files, listed once after warm-up: a child reading every
# module's ``__file__`` instead copies a page per module it touches (about 0.15 ms a job).
_MODULE_FILES: list[tuple[str, str]] = []


def _module_files() -> list[tuple[str, str]]:
    return [
        (name, getattr(module, "__file__", None) or "")
        for name, module in list(sys.modules.items())
    ]


def _child(req: dict[str, Any], fds: tuple[int, int, int], base_procs: int) -> None:
    code = 1
    try:
        os.setsid()
        _prctl(PR_SET_DUMPABLE, 1)
        # at the server's memory limit the OOM killer takes the job, not the server
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 65536)
        _set_limits(req["limits"], base_procs)
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(WORK)
        argv = req["argv"]
        if argv[0] != "python":
            os.execvp(argv[0], argv)
        _run_python(argv[1:])
        code = 0
    except SystemExit as exc:
        c = exc.code
        code = c if isinstance(c, int) else (0 if c is None else 1)
        if not isinstance(c, int) and c is not None:
            print(c, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - report any job fault like the interpreter would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code & 0xFF)


def _kill_all() -> None:
    """SIGKILL every process in the namespace except this server and pid 1, then reap."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        _reap(block=False)  # zombies still count as targets of kill(-1)
        time.sleep(0.001)
    _reap(block=True)


def _reap(*, block: bool) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _wipe(path: str) -> None:
    with contextlib.suppress(OSError):  # /dev/mqueue is not the server's to chmod
        os.chmod(path, 0o700)
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            for root, dirs, _ in os.walk(full):
                for d in dirs:
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(root, d), 0o700)
            os.chmod(full, 0o700)
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.unlink(full)


def _wipe_sysv_ipc() -> None:
    """Remove every SysV shared memory segment, semaphore set and message queue (the job ran
    as this server's uid, so it owns them all)."""
    libc = _LIBC
    for kind, call in SYSV_IPC.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ipc_id = int(row.split()[1])
            if kind == "sem":
                getattr(libc, call)(ipc_id, 0, IPC_RMID)
            else:
                getattr(libc, call)(ipc_id, IPC_RMID, None)


def _write_files(files: dict[str, str]) -> None:
    for name, data in files.items():
        path = os.path.join(WORK, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))


def _serve_one(req: dict[str, Any], base_procs: int) -> dict[str, Any]:
    lim = req["limits"]
    start = time.monotonic()
    _write_files(req["files"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(req, (in_r, out_w, err_w), base_procs)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    stdin = base64.b64decode(req["stdin"])
    pidfd = os.pidfd_open(pid)
    caps = {out_r: lim["stdout_bytes"], err_r: lim["stderr_bytes"]}
    kept: dict[int, bytearray] = {out_r: bytearray(), err_r: bytearray()}
    seen = {out_r: 0, err_r: 0}
    open_fds = [out_r, err_r]
    deadline = start + lim["wall_s"]
    timed_out = output_killed = exited = False
    os.set_blocking(in_w, False)
    pending = memoryview(stdin)
    writers = [in_w] if pending else []
    if not pending:
        os.close(in_w)
    status = 0
    cpu = 0.0
    while open_fds or not exited:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        watch = open_fds + ([] if exited else [pidfd])
        readable, writable, _ = select.select(watch, writers, [], left)
        for fd in writable:
            try:
                pending = pending[os.write(fd, pending[: 1 << 16]) :]
            except OSError:
                pending = pending[:0]
            if not pending:
                os.close(fd)
                writers = []
        for fd in readable:
            if fd == pidfd:
                _, status, ru = os.wait4(pid, 0)
                cpu = ru.ru_utime + ru.ru_stime
                exited = True
                _kill_all()  # survivors die with the job; pipes then reach EOF
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.remove(fd)
                continue
            room = caps[fd] - len(kept[fd])
            if room > 0:
                kept[fd] += chunk[:room]
            seen[fd] += len(chunk)
            if seen[fd] > max(caps[fd] * 8, caps[fd] + (8 << 20)):
                output_killed = True
        if output_killed:
            break
    if not exited:
        os.killpg(pid, signal.SIGKILL)
        _, status, ru = os.wait4(pid, 0)
        cpu = ru.ru_utime + ru.ru_stime
    _kill_all()
    for fd in [*open_fds, *writers, pidfd, out_r, err_r]:
        with contextlib.suppress(OSError):
            os.close(fd)
    for path in WRITABLE:
        _wipe(path)
    _wipe_sysv_ipc()
    return {
        "status": status,
        "stdout": base64.b64encode(kept[out_r]).decode(),
        "stderr": base64.b64encode(kept[err_r]).decode(),
        "stdout_seen": seen[out_r],
        "stderr_seen": seen[err_r],
        "timed_out": timed_out,
        "output_killed": output_killed,
        "wall_s": time.monotonic() - start,
        "cpu_s": cpu,
    }


def _serve_live(
    req: dict[str, Any], fds: list[int], ctrl: socket.socket, base_procs: int
) -> dict[str, Any] | None:
    """Run one live job on the host's pipes until the host says stop (None: the host hung up)."""
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        raise OSError(errno.EBADF, "a live job needs its stdin and stdout")
    start = time.monotonic()
    _write_files(req["files"])
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(req, (fds[0], fds[1], err_w), base_procs)
    for fd in (*fds, err_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    cap = req["limits"]["stderr_bytes"]
    kept = bytearray()
    seen = 0
    status, cpu, exited, err_open = 0, 0.0, False, True
    while True:
        watch = [ctrl.fileno(), *([err_r] if err_open else []), *([] if exited else [pidfd])]
        readable = select.select(watch, [], [])[0]
        if pidfd in readable:
            _, status, ru = os.wait4(pid, 0)
            cpu = ru.ru_utime + ru.ru_stime
            exited = True
            _kill_all()  # survivors die with the job
        if err_r in readable:
            chunk = os.read(err_r, 1 << 16)
            err_open = bool(chunk)
            kept += chunk[: max(0, cap - len(kept))]
            seen += len(chunk)
        if ctrl.fileno() in readable:
            break
    stop = _read_frame(ctrl, [])
    if not exited:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        _, status, ru = os.wait4(pid, 0)
        cpu = ru.ru_utime + ru.ru_stime
    _kill_all()
    for fd in (err_r, pidfd):
        os.close(fd)
    for path in WRITABLE:
        _wipe(path)
    _wipe_sysv_ipc()
    if stop is None:
        return None
    return {
        "status": status,
        "stderr": base64.b64encode(kept).decode(),
        "stderr_seen": seen,
        "wall_s": time.monotonic() - start,
        "cpu_s": cpu,
    }


def main() -> None:
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _warm(sys.argv[2:])
    _MODULE_FILES[:] = _module_files()
    gc.freeze()  # a child's collections then skip (and do not copy) the server's warm objects
    ctrl = socket.socket(fileno=os.dup(0))
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    for stream in (sys.stdout, sys.stderr):  # what the warm-up printed: to /dev/null, not
        stream.flush()  # left in the buffer for every forked job to write out as its own
    base_procs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    hello = {"ready": True, "pid": os.getpid(), "server_cpu_s": _own_cpu_s()}
    _write_frame(ctrl.fileno(), hello)
    while True:
        fds: list[int] = []
        req = _read_frame(ctrl, fds)
        if req is None:
            return
        try:
            if req.get("live"):
                resp = _serve_live(req, fds, ctrl, base_procs)
                if resp is None:
                    return
            else:
                resp = _serve_one(req, base_procs)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return
            resp = {"error": f"{type(exc).__name__}: {exc}"}
        resp["server_cpu_s"] = _own_cpu_s()
        _write_frame(ctrl.fileno(), resp)


if __name__ == "__main__":
    main()
