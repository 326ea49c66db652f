"""The warm Python fork server: isolation between jobs, speed, recovery."""

from __future__ import annotations

import contextlib
import json
import os
import select
from typing import Any

import pytest

from rl_verifier_sandbox.api import Job, Limits, Policy
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.bwrap.forkserver import PythonForkServer, PythonPool, ServerDied

PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
TESTS = {"test_a.py": "def test_ok():\n    assert 1 + 1 == 2\n\ndef test_bad():\n    assert 0\n"}


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def test_job2_cannot_see_job1(pool: PythonPool) -> None:
    code1 = (
        "import os; open('secret', 'w').write('1'); open('/tmp/s', 'w').write('1'); os.mkdir('d')"
    )
    assert pool.run(py(code1)).exit_code == 0
    code2 = "import os; print(os.listdir('.'), os.listdir('/tmp'), os.listdir('/dev/shm'))"
    assert pool.run(py(code2)).stdout == b"[] [] []\n"


def test_pytest_job_result(pool: PythonPool) -> None:
    r = pool.run(Job(argv=PYTEST, files=TESTS))
    assert r.exit_code == 1 and b"1 failed, 1 passed" in r.stdout


def test_warm_pytest_job_gives_the_same_result_as_cold(pool: PythonPool, sb: BwrapSandbox) -> None:
    # Speed lives in benchmarks/bench_pytest_job.py; here the two paths must agree.
    job = Job(argv=PYTEST, files=TESTS)
    warm, cold = pool.run(job), sb.run(job)
    assert warm.exit_code == cold.exit_code == 1


def test_server_recovers_after_being_killed(pool: PythonPool) -> None:
    pool.run(py("import os; os.kill(os.getppid(), 9)"))
    assert pool.run(py("print('again')")).stdout == b"again\n"


def test_non_python_job_falls_back_to_cold_path(pool: PythonPool) -> None:
    r = pool.run(Job(argv=("sh", "-c", "echo hi")))
    assert r.stdout == b"hi\n"


def test_script_and_module_entries(pool: PythonPool) -> None:
    files = {"m.py": "import sys; print('mod', sys.argv[1:])", "s.py": "import m"}
    assert pool.run(Job(argv=("python", "-m", "m", "x"), files=files)).stdout == b"mod ['x']\n"
    assert pool.run(Job(argv=("python", "s.py"), files=files)).stdout == b"mod []\n"


def talk(pool: PythonPool, code: str, *flags: str) -> tuple[bytes, bytes]:
    """One live job: its first line of output (it gets ``go`` on stdin), then its stderr."""
    live = pool.open_process(Job(argv=("python", *flags, "-c", code)))
    try:
        with contextlib.suppress(BrokenPipeError):  # a job may end before it reads
            os.write(live.stdin_fd, b"go\n")
        out = b""
        while b"\n" not in out and select.select([live.stdout_fd], [], [], 10)[0]:
            chunk = os.read(live.stdout_fd, 1 << 16)
            if not chunk:
                break
            out += chunk
    finally:
        live.finish()
    return out.split(b"\n")[0], bytes(live.stderr)


POLLUTE = """
import builtins, os, subprocess, sys, threading, time, pytest
open('left', 'w').write('1'); open('/tmp/left', 'w').write('1'); open('/dev/shm/left', 'w')
os.environ['PROBE_LEFT_BEHIND'] = '1'
pytest.main = None
sys.modules['json'] = None
threading.Thread(target=time.sleep, args=(60,), daemon=False).start()
subprocess.Popen(['sleep', '60'], start_new_session=True)
if os.fork() == 0:
    time.sleep(60)
sys.stdin.readline()
print('to stderr', file=sys.stderr, flush=True)  # before the line the test waits for
print('polluted', flush=True)
builtins.len = lambda x: 0
"""
PROBE = """
import builtins, glob, json, os, sys, pytest
sys.stdin.readline()
seen = {
    'files': glob.glob('/job/*') + glob.glob('/tmp/*') + glob.glob('/dev/shm/*'),
    'env': 'PROBE_LEFT_BEHIND' in os.environ,
    'len': len([1]),
    'pytest': pytest.main is None,
    'procs': [
        p for p in os.listdir('/proc')
        if p.isdigit() and int(p) not in (1, os.getppid(), os.getpid())
    ],
}
print(json.dumps(seen), flush=True)
"""


def test_live_job_leaves_nothing_for_the_next(pool: PythonPool) -> None:
    """A live job forked by the warm server (one server, so the same for both jobs): files,
    environment, patched builtins and modules, threads and processes die with it."""
    assert talk(pool, POLLUTE) == (b"polluted", b"to stderr\n")
    line, _ = talk(pool, PROBE)
    assert json.loads(line) == {"files": [], "env": False, "len": 1, "pytest": False, "procs": []}


def test_live_job_with_dash_s_sees_no_site_packages(pool: PythonPool) -> None:
    """``-I -S`` as in a fresh interpreter: the server's warm pytest is not importable."""
    code = "import sys; sys.stdin.readline(); import pytest"
    _, stderr = talk(pool, code, "-I", "-S")
    assert b"ModuleNotFoundError: No module named 'pytest'" in stderr


def test_live_job_killing_its_server_is_reported_and_the_server_replaced(pool: PythonPool) -> None:
    assert talk(pool, "import os; os.kill(os.getppid(), 9)") == (b"", b"")
    assert talk(pool, "import sys; sys.stdin.readline(); print('again')")[0] == b"again"


def test_a_live_job_no_server_received_is_sent_to_a_fresh_one(
    pool: PythonPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that died while idle (the send fails: broken pipe) never saw the job."""
    real = PythonForkServer._send
    sends: list[object] = []

    def lost_once(self: PythonForkServer, obj: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        sends.append(obj)
        if len(sends) == 1:
            raise ServerDied("[Errno 32] Broken pipe")
        real(self, obj, fds)

    monkeypatch.setattr(PythonForkServer, "_send", lost_once)
    assert talk(pool, "import sys; sys.stdin.readline(); print('again')")[0] == b"again"
    assert len(sends) >= 2


SCRIPT = """import sys
print(__name__, __file__, sys.argv, sys.modules["__main__"].__dict__ is globals())
print(__spec__, __package__ in ("", None), __cached__, __loader__ is None or "cold")
"""


def test_a_warm_script_runs_as_main_as_it_would_cold(sb: BwrapSandbox) -> None:
    """A script the server warmed runs from its code compiled at start-up, with what
    ``runpy.run_path`` gives a script: ``__main__``, its path, its argv."""
    path = "/opt/warm/script_warm.py"
    job = Job(
        argv=("python", "-I", path, "a", "b"),
        policy=Policy(python=True, readonly_files={path: SCRIPT}),
    )
    with sb.python_pool(size=1, readonly_files={path: SCRIPT}, warm=(path,)) as warm:
        fast = warm.run(job)
    cold = sb.run(job)
    first = f"__main__ {path} {[path, 'a', 'b']} True\n".encode()
    assert fast.stdout == first + b"None True None True\n", fast.stderr
    assert cold.stdout.startswith(first), cold.stderr


def test_pool_stats_count_start_ups_and_each_jobs_cpu(sb: BwrapSandbox) -> None:
    with sb.python_pool(size=1) as fresh:
        started = fresh.stats.snapshot()
        for _ in range(3):
            assert fresh.run(py("sum(range(200_000))")).exit_code == 0
        talk(fresh, "import sys; sys.stdin.readline()")
    stats = fresh.stats.snapshot()
    assert started.servers_started == stats.servers_started == 1
    assert started.start_cpu_s > 0 and started.start_wall_s > 0 and started.jobs == 0
    assert stats.jobs == 4  # three runs and one live job
    assert stats.job_cpu_s > 0 and stats.server_cpu_s > 0
