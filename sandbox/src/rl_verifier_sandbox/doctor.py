"""``rlv sandbox doctor``: which backends work here and which limits are really enforced.

A backend "works" only when a real job ran on it. Every limit is then checked by running a
probe job on the requested backend, never by reading configuration; each check names the
mechanism the backend uses for it (``mechanisms()`` of the sandbox, where it has one).
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from rl_verifier_sandbox.api import Job, Limits, Policy, Result, Sandbox, SandboxUnavailable
from rl_verifier_sandbox.backends import backend_names

SECRET = "RLV_DOCTOR_SECRET"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    mechanism: str = ""  # what enforces it: cgroup-v1, rlimit, namespace, host, ...


Probe = Callable[[Sandbox], Check]


def _py(code: str, **limits: Any) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**{"wall_s": 10.0, **limits}))


def _tail(r: Result) -> str:
    return r.stderr.decode(errors="replace").strip()[-200:]


def _probe_job(sb: Sandbox) -> Check:
    job = Job(
        argv=("python", "main.py"),
        files={"main.py": "import sys; print(open('d/x').read(), sys.stdin.read())", "d/x": "f"},
        stdin=b"in",
    )
    r = sb.run(job)
    out = r.stdout.decode(errors="replace").strip()
    return Check("files_and_stdin", out == "f in", f"job printed {out!r}" if out else _tail(r))


def _probe_readonly(sb: Sandbox) -> Check:
    code = "print(open('/opt/rlv-doctor/x').read()); open('/opt/rlv-doctor/x', 'w')"
    job = Job(argv=("python", "-c", code), policy=Policy(readonly_files={"/opt/rlv-doctor/x": "R"}))
    r = sb.run(job)
    refused = r.exit_code not in (0, None) and b"Error" in r.stderr
    ok = r.stdout == b"R\n" and refused
    write = "refused" if refused else "ALLOWED"
    return Check("readonly_files", ok, f"read {r.stdout!r}, write {write}")


def _probe_uid(sb: Sandbox) -> Check:
    r = sb.run(_py("import os; print(os.getuid())"))
    uid = r.stdout.decode().strip()
    return Check("uid_not_root", r.exit_code == 0 and uid not in ("", "0"), f"uid inside = {uid}")


def _probe_env(sb: Sandbox) -> Check:
    os.environ[SECRET] = "visible"
    try:
        r = sb.run(_py(f"import os; print(os.environ.get({SECRET!r}, 'hidden'))"))
    finally:
        os.environ.pop(SECRET, None)
    seen = r.stdout.decode().strip()
    return Check("host_env_hidden", seen == "hidden", f"host variable seen as {seen!r}")


def _probe_fs(sb: Sandbox) -> Check:
    """Marker files made on the host (home and temp dirs) are not visible; /usr is read-only."""
    markers = []
    for base in (os.path.expanduser("~"), tempfile.gettempdir(), os.getcwd()):
        with contextlib.suppress(OSError):
            fd, path = tempfile.mkstemp(prefix="rlv-doctor-", dir=base)
            os.close(fd)
            markers.append(path)
    code = (
        f"import os\nvis = [p for p in {markers!r} if os.path.exists(p)]\n"
        "try:\n    open('/usr/rlv-probe', 'w'); w = 'writable'\n"
        "except OSError:\n    w = 'read-only'\n"
        "print(vis, w)"
    )
    try:
        r = sb.run(_py(code))
    finally:
        for path in markers:
            with contextlib.suppress(OSError):
                os.unlink(path)
    out = r.stdout.decode().strip()
    return Check("host_fs_hidden_and_ro", out == "[] read-only", out or _tail(r))


def _probe_net(sb: Sandbox) -> Check:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        code = (
            "import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('reached')\n"
            "except OSError as e:\n    print('unreachable')"
        )
        r = sb.run(_py(code))
    out = r.stdout.decode().strip()
    return Check("network_off", out == "unreachable", f"host 127.0.0.1:{port} {out}")


def _probe_fork(sb: Sandbox) -> Check:
    code = "import os\nwhile True:\n    os.fork()"
    r = sb.run(_py(code, processes=16, wall_s=5.0))
    ok = not r.timed_out and r.limit_hit == "processes"
    return Check("process_limit", ok, f"fork bomb: limit_hit={r.limit_hit} wall={r.wall_s:.2f}s")


def _probe_survivors(sb: Sandbox) -> Check:
    """A double-forked, setsid'ed sleeper must not outlive its job."""
    sb.run(_py("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(3)"))
    code = (
        "import os\nme, up = os.getpid(), set()\np = me\n"
        "while p > 1:\n    up.add(p)\n"
        "    p = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "def uid(p):\n    try:\n        return os.stat(f'/proc/{p}').st_uid\n"
        "    except OSError:\n        return None\n"
        "print(len([p for p in os.listdir('/proc') if p.isdigit() and int(p) not in up | {1}"
        " and uid(p) == os.getuid()]))"
    )
    r = sb.run(_py(code))
    left = r.stdout.decode().strip()
    return Check("nothing_survives", left == "0", f"processes left by the previous job: {left}")


def _limit(name: str, code: str, want: str, **limits: Any) -> Probe:
    def probe(sb: Sandbox) -> Check:
        r = sb.run(_py(code, **limits))
        return Check(name, r.limit_hit == want, f"limit_hit={r.limit_hit} exit={r.exit_code}")

    return probe


def _probe_open_files(sb: Sandbox) -> Check:
    code = (
        "fs = []\ntry:\n    while True: fs.append(open('/dev/null'))\n"
        "except OSError:\n    print(len(fs))"
    )
    r = sb.run(_py(code, open_files=32))
    n = r.stdout.decode().strip()
    ok = n.isdigit() and int(n) <= 32
    return Check("open_files_limit", ok, f"opened {n or '?'} files under a limit of 32")


def _probe_tmp(sb: Sandbox) -> Check:
    code = (
        "import os\nf = open('/tmp/rlv-doctor-fill', 'wb')\n"
        "try:\n    while True: f.write(b'x' * 65536); f.flush()\n"
        "except OSError as e:\n    print(e.errno)\n"
        "finally:\n    os.remove('/tmp/rlv-doctor-fill')"
    )
    r = sb.run(_py(code, tmp_bytes=4 << 20, file_bytes=16 << 20))
    out = r.stdout.decode().strip()
    return Check("tmp_size_limit", out == "28", f"4 MiB /tmp full: errno {out or '?'}")


def _probe_wall(sb: Sandbox) -> Check:
    r = sb.run(_py("import time; time.sleep(30)", wall_s=0.5))
    return Check("wall_deadline", r.timed_out, f"sleep 30 s stopped after {r.wall_s:.2f}s")


# (probe, key of the sandbox's mechanisms())
PROBES: list[tuple[Probe, str]] = [
    (_probe_job, "filesystem"),
    (_probe_readonly, "filesystem"),
    (_probe_uid, "uid"),
    (_probe_env, "environment"),
    (_probe_fs, "filesystem"),
    (_probe_net, "network"),
    (_probe_survivors, "cleanup"),
    (_probe_fork, "processes"),
    (_limit("memory_limit", "x = bytearray(1 << 30)", "memory", memory_bytes=256 << 20), "memory"),
    (
        _limit(
            "file_size_limit",
            "open('f','wb').write(b'x' * (2 << 20))",
            "file_size",
            file_bytes=1 << 20,
        ),
        "file_size",
    ),
    (_probe_open_files, "open_files"),
    (_probe_tmp, "filesystem"),
    (_limit("cpu_limit", "while True: pass", "cpu", cpu_s=1.0), "cpu"),
    (
        _limit(
            "output_cap",
            "import os\nwhile True: os.write(1, b'x' * 65536)",
            "output",
            stdout_bytes=4096,
        ),
        "output",
    ),
    (_probe_wall, "wall"),
]


def _backend(name: str, image: str | None) -> tuple[Sandbox | None, str]:
    """The backend and "works", or None and why not. A trivial job really runs first."""
    from rl_verifier_sandbox import get_sandbox

    try:
        sb = get_sandbox(name, image=image)
    except SandboxUnavailable as exc:
        return None, str(exc)
    try:
        r = sb.run(Job(argv=("python", "-c", "print('ok')")))
    except Exception as exc:  # noqa: BLE001 - report, do not crash the doctor
        sb.close()
        return None, f"a job failed to run: {exc}"
    if r.stdout != b"ok\n":
        sb.close()
        return None, f"a trivial Python job failed: {_tail(r) or r.exit_code}"
    detail = f"works ({r.wall_s * 1000:.0f} ms per job)"
    image_name = getattr(sb, "image", None)
    return sb, f"{detail}, image {image_name}" if image_name else detail


def run_doctor(backend: str = "bwrap", *, image: str | None = None) -> dict[str, Any]:
    """Try every backend of the table with a real job and run the limit checks on
    ``backend``: every probe, then the syscall filter where the backend says seccomp
    enforces it, and the fork server where the backend has one."""
    import logging

    quiet = logging.getLogger("rl_verifier_sandbox.process")  # its warning is a report line here
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    report: dict[str, Any] = {"backends": {}, "checks": [], "backend": backend}
    sandboxes: dict[str, Sandbox] = {}
    try:
        for name in backend_names():
            sb, why = _backend(name, image)
            info = {"works": sb is not None, "isolates": sb.isolates if sb else None}
            report["backends"][name] = {**info, "detail": why}
            if sb is not None:
                sandboxes[name] = sb
        target = sandboxes.get(backend)
        if target is None:
            return report
        mechanisms = target.mechanisms()
        report["checks"] = [asdict(check) for check in run_checks(target, mechanisms)]
        if mechanisms.get("syscalls") == "seccomp":
            report["checks"].append(asdict(_probe_syscalls(target)))
        python_pool = getattr(target, "python_pool", None)
        if callable(python_pool):
            report["checks"].append(asdict(_probe_forkserver(python_pool)))
    finally:
        quiet.setLevel(level)
        for sb in sandboxes.values():
            with contextlib.suppress(Exception):
                sb.close()
    return report


def run_checks(sb: Sandbox, mechanisms: dict[str, str] | None = None) -> list[Check]:
    """Every probe on ``sb``; a probe that raises is a failed check, not a crash.
    ``mechanisms``: ``sb.mechanisms()``, when the caller has read them already."""
    if mechanisms is None:
        mechanisms = sb.mechanisms()
    checks = []
    for probe, key in PROBES:
        try:
            check = probe(sb)
        except Exception as exc:  # noqa: BLE001 - report, do not crash the doctor
            name = getattr(probe, "__name__", "probe").removeprefix("_probe_")
            check = Check(name, False, f"probe failed: {type(exc).__name__}: {exc}")
        checks.append(Check(check.name, check.ok, check.detail, mechanisms.get(key, "")))
    return checks


def _probe_syscalls(sb: Sandbox) -> Check:
    """Each call the seccomp filter denies (bwrap's, also docker's profile) fails with EPERM
    inside a job."""
    from rl_verifier_sandbox.linux import seccomp

    try:
        ok, detail = seccomp.check_denied(sb)
    except SandboxUnavailable as exc:
        ok, detail = False, str(exc)
    return Check("syscall_filter", ok, detail, "seccomp" if ok else "none")


def _probe_forkserver(python_pool: Callable[..., Sandbox]) -> Check:
    """The backend's warm Python pool (its ``python_pool`` method) runs a pytest job."""
    try:
        pool = python_pool(size=1)
    except Exception as exc:  # noqa: BLE001 - report, do not crash the doctor
        return Check("python_fork_server", False, f"cannot start: {exc}")
    try:
        files = {"test_ok.py": "def test_ok():\n    assert True\n"}
        job = Job(argv=("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"), files=files)
        pool.run(job)
        r: Result = pool.run(job)
    finally:
        pool.close()
    return Check(
        "python_fork_server", r.exit_code == 0, f"pytest job {r.wall_s * 1000:.0f} ms", "host"
    )


def format_report(report: dict[str, Any]) -> str:
    lines = ["backends:"]
    for name, info in report["backends"].items():
        mark = "ok " if info["works"] else "no "
        iso = "" if info["isolates"] is None else ("" if info["isolates"] else " (NO ISOLATION)")
        lines.append(f"  {mark} {name:<8} {info['detail']}{iso}")
    if not report["checks"]:
        lines.append(f"no checks: backend {report['backend']!r} does not work here")
        return "\n".join(lines)
    lines.append(f"enforced on {report['backend']} (each checked by a probe job):")
    for c in report["checks"]:
        mark = "ok " if c["ok"] else "NOT"
        lines.append(f"  {mark} {c['name']:<22} {c['mechanism'] or '-':<10} {c['detail']}")
    return "\n".join(lines)


__all__ = ["Check", "format_report", "run_checks", "run_doctor"]
