"""``rlv sandbox doctor``: which backends work here and which limits are really enforced.

Every limit is checked by running a probe job, never by reading configuration.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rl_verifier_sandbox.api import Job, Limits, Result, Sandbox, SandboxUnavailable

SECRET = "RLV_DOCTOR_SECRET"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _py(code: str, **limits: Any) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**{"wall_s": 10.0, **limits}))


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
    code = (
        "import os\n"
        "vis = [p for p in ('/root', '/work', '/home') if os.path.exists(p)]\n"
        "try:\n    open('/usr/rlv-probe', 'w'); w = 'writable'\n"
        "except OSError:\n    w = 'read-only'\n"
        "print(vis, w)"
    )
    r = sb.run(_py(code))
    out = r.stdout.decode().strip()
    return Check("host_fs_hidden_and_ro", out == "[] read-only", out or r.stderr.decode()[-200:])


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


def _limit(name: str, code: str, want: str, **limits: Any) -> Callable[[Sandbox], Check]:
    def probe(sb: Sandbox) -> Check:
        r = sb.run(_py(code, **limits))
        return Check(name, r.limit_hit == want, f"limit_hit={r.limit_hit} exit={r.exit_code}")

    return probe


def _probe_wall(sb: Sandbox) -> Check:
    r = sb.run(_py("import time; time.sleep(30)", wall_s=0.5))
    return Check("wall_deadline", r.timed_out, f"sleep 30 s stopped after {r.wall_s:.2f}s")


PROBES: list[Callable[[Sandbox], Check]] = [
    _probe_uid,
    _probe_env,
    _probe_fs,
    _probe_net,
    _probe_fork,
    _limit("memory_limit", "x = bytearray(1 << 30)", "memory", memory_bytes=256 << 20),
    _limit(
        "file_size_limit", "open('f','wb').write(b'x' * (2 << 20))", "file_size", file_bytes=1 << 20
    ),
    _limit("cpu_limit", "while True: pass", "cpu", cpu_s=1.0),
    _limit(
        "output_cap",
        "import os\nwhile True: os.write(1, b'x' * 65536)",
        "output",
        stdout_bytes=4096,
    ),
    _probe_wall,
]


def _backend(name: str) -> tuple[Sandbox | None, str]:
    from rl_verifier_sandbox import get_sandbox

    try:
        return get_sandbox(name), "works"
    except SandboxUnavailable as exc:
        return None, str(exc)


def run_doctor(backend: str = "bwrap") -> dict[str, Any]:
    """Probe every backend and run the limit checks on ``backend``."""
    import logging

    logging.getLogger("rl_verifier_sandbox.process").setLevel(logging.ERROR)
    report: dict[str, Any] = {"backends": {}, "checks": [], "backend": backend}
    sandboxes: dict[str, Sandbox] = {}
    for name in ("bwrap", "docker", "process"):
        sb, why = _backend(name)
        isolates = sb.isolates if sb else None
        report["backends"][name] = {"works": sb is not None, "isolates": isolates, "detail": why}
        if sb is not None:
            sandboxes[name] = sb
    target = sandboxes.get(backend)
    if target is None:
        return report
    for probe in PROBES:
        check = probe(target)
        report["checks"].append(check.__dict__)
    if backend == "bwrap":
        report["checks"].append(_probe_forkserver(target).__dict__)
    for sb in sandboxes.values():
        sb.close()
    return report


def _probe_forkserver(sb: Sandbox) -> Check:
    from rl_verifier_sandbox.bwrap import BwrapSandbox

    assert isinstance(sb, BwrapSandbox)
    try:
        pool = sb.python_pool(size=1)
    except Exception as exc:  # noqa: BLE001 - report, do not crash the doctor
        return Check("python_fork_server", False, f"cannot start: {exc}")
    with pool:
        files = {"test_ok.py": "def test_ok():\n    assert True\n"}
        job = Job(argv=("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"), files=files)
        pool.run(job)
        r: Result = pool.run(job)
    return Check("python_fork_server", r.exit_code == 0, f"pytest job {r.wall_s * 1000:.0f} ms")


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
        lines.append(f"  {'ok ' if c['ok'] else 'NOT'} {c['name']:<22} {c['detail']}")
    return "\n".join(lines)


__all__ = ["Check", "format_report", "run_doctor"]
