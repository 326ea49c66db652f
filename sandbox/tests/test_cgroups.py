"""Per-job cgroups on the bwrap backend: resident memory, pids, CPU accounting, cleanup.

The tests that run jobs need root and a writable cgroupfs (``host_cgroups()``); elsewhere they
skip with the reason. cgroup v2 with controllers cannot exist on a host whose controllers are
bound to v1 hierarchies, so its file layout is checked against a directory tree instead.
"""

from __future__ import annotations

import glob
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rl_verifier_sandbox.api import Job, Limits, Result, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.bwrap.forkserver import PythonPool
from rl_verifier_sandbox.linux import cgroups

HOST = cgroups.host_cgroups()
needs_cgroups = pytest.mark.skipif(
    HOST is None, reason=f"no job cgroups here: {cgroups.unavailable_reason()}"
)
TOUCH_600_MIB = "b = bytearray(600 << 20)\nprint('survived')"
MMAP_8_GIB = (  # reserve like a JVM (MAP_NORESERVE, 0x4000), touch one page
    "import mmap\n"
    "m = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)\n"
    "m[:4] = b'used'\n"
    "print(len(m))"
)


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def my_cgroup_dirs() -> list[str]:
    """Job cgroup directories this test process made and has not removed (the session's warm
    pool holds one while it lives)."""
    assert HOST is not None
    pattern = f"{cgroups.PREFIX}{os.getpid()}-*"
    return sorted(
        path for parent in set(HOST.parents.values()) for path in glob.glob(f"{parent}/{pattern}")
    )


@pytest.fixture(params=["cold", "warm"])
def any_sb(request: pytest.FixtureRequest, sb: BwrapSandbox, pool: PythonPool) -> Sandbox:
    return sb if request.param == "cold" else pool


@pytest.fixture
def no_cgroup_sb() -> BwrapSandbox:
    sandbox = BwrapSandbox(cgroups=False)
    sandbox.check()
    return sandbox


@needs_cgroups
def test_touched_memory_over_the_limit_is_a_memory_outcome(any_sb: Sandbox) -> None:
    r = any_sb.run(py(TOUCH_600_MIB, memory_bytes=256 << 20))
    assert r.limit_hit == "memory", r
    assert b"survived" not in r.stdout and not r.timed_out


@needs_cgroups
def test_untouched_8_gib_mapping_runs_under_512_mib(any_sb: Sandbox) -> None:
    r = any_sb.run(py(MMAP_8_GIB, memory_bytes=512 << 20))
    assert (r.exit_code, r.stdout, r.limit_hit) == (0, b"8589934592\n", None), r.stderr


def test_rlimit_fallback_refuses_the_8_gib_mapping(no_cgroup_sb: BwrapSandbox) -> None:
    """What the cgroup fixes: RLIMIT_AS counts address space, so the JVM-style reservation
    fails, while touched memory is still stopped as a memory outcome."""
    assert no_cgroup_sb.mechanisms()["memory"] == "rlimit"
    r = no_cgroup_sb.run(py(MMAP_8_GIB, memory_bytes=512 << 20))
    assert r.exit_code != 0 and b"Cannot allocate memory" in r.stderr
    r = no_cgroup_sb.run(py(TOUCH_600_MIB, memory_bytes=256 << 20))
    assert r.limit_hit == "memory" and b"MemoryError" in r.stderr


@needs_cgroups
def test_mechanisms_name_the_cgroup_version(sb: BwrapSandbox, pool: PythonPool) -> None:
    assert HOST is not None
    mech = sb.mechanisms()
    assert mech["memory"] == mech["processes"] == mech["cpu"] == HOST.mechanism
    assert (mech["file_size"], mech["syscalls"], mech["network"]) == (
        "rlimit",
        "seccomp",
        "namespace",
    )
    assert pool.mechanisms()["cpu"] == "rlimit"  # a warm job's CPU is capped per process


@needs_cgroups
def test_fork_bomb_does_not_starve_a_concurrent_job(sb: BwrapSandbox) -> None:
    """Each job has its own pids limit and its own CPU share. The bomb fills its pids limit
    with spinning processes, each in its own session (so the scheduler's per-session
    autogroups do not contain it); a concurrent job still gets its share of the CPU. On
    rlimits alone the same job gets 1/65 of it and misses its deadline."""
    bomb = (
        "import os\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"
        "    except OSError:\n"
        "        break\n"
        "while True:\n"
        "    pass\n"
    )
    work = "print(sum(i * i for i in range(6_000_000)))"  # about 0.3 s of CPU
    expected = f"{sum(i * i for i in range(6_000_000))}\n".encode()
    before = my_cgroup_dirs()
    bomb_result: list[Result] = []
    bomber = threading.Thread(
        target=lambda: bomb_result.append(sb.run(py(bomb, wall_s=4, cpu_s=60)))
    )
    bomber.start()
    try:
        time.sleep(0.5)  # let the bomb reach full strength
        work_result = sb.run(py(work, wall_s=3, cpu_s=60))
    finally:
        bomber.join()
    assert (work_result.exit_code, work_result.stdout) == (0, expected), work_result
    assert not work_result.timed_out
    assert bomb_result[0].timed_out  # it spun to its deadline, at most 64 processes strong
    assert my_cgroup_dirs() == before


@needs_cgroups
def test_cpu_time_counts_processes_that_outlive_the_job(sb: BwrapSandbox) -> None:
    """Two children burn 0.5 s of CPU each, then keep spinning; the main process exits once
    both have (EOF on a pipe they hold) and the sandbox kills them. Nobody waited for them, so
    rusage misses their CPU (0.02 s measured without cgroups); the job's cgroup does not. A
    loaded host only makes the job slower."""
    code = (
        "import os, time\n"
        "r, w = os.pipe()\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        os.close(r)\n"
        "        end = time.process_time() + 0.5\n"
        "        while time.process_time() < end:\n"
        "            pass\n"
        "        os.close(w)\n"
        "        while True:\n"
        "            pass\n"
        "os.close(w)\n"
        "os.read(r, 1)\n"
        "os._exit(0)\n"
    )
    r = sb.run(py(code, wall_s=20))
    assert r.exit_code == 0 and not r.timed_out and r.cpu_s >= 0.9, r


@needs_cgroups
def test_cpu_limit_covers_every_process_of_the_job(sb: BwrapSandbox) -> None:
    """Four spinning processes under cpu_s=1: RLIMIT_CPU alone would allow 4 s in total."""
    code = "import os\nfor _ in range(2):\n    os.fork()\nwhile True:\n    pass\n"
    r = sb.run(py(code, cpu_s=1, wall_s=20))
    assert r.limit_hit == "cpu" and not r.timed_out
    assert 0.9 <= r.cpu_s < 2.0, r.cpu_s


@needs_cgroups
def test_no_cgroup_is_left_behind(sb: BwrapSandbox) -> None:
    before = my_cgroup_dirs()
    jobs = [
        py("print('ok')"),
        py("import time; time.sleep(30)", wall_s=0.3),  # killed at the deadline
        py(TOUCH_600_MIB, memory_bytes=128 << 20),  # OOM-killed
        py("import os\nwhile True:\n    os.fork()", processes=8, wall_s=5),
        py("import os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(30)\n"),
        Job(argv=("python", "x.py"), files={"../escape": "x"}),  # refused before it starts
    ]
    for job in jobs:
        sb.run(job)
    assert my_cgroup_dirs() == before
    with sb.python_pool(size=1) as pool:
        names = {os.path.basename(d) for d in my_cgroup_dirs()}
        assert len(names) == len({os.path.basename(d) for d in before}) + 1  # the new server's
        pool.run(py(TOUCH_600_MIB, memory_bytes=128 << 20))
        pool.run(py("import os\nos.kill(os.getppid(), 9)"))  # the job kills its server
        assert pool.run(py("print('ok')")).stdout == b"ok\n"
    assert my_cgroup_dirs() == before


@needs_cgroups
def test_stale_cgroups_of_dead_owners_are_swept() -> None:
    assert HOST is not None
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    name = f"{cgroups.PREFIX}{dead.pid}-0"
    for parent in set(HOST.parents.values()):
        os.mkdir(os.path.join(parent, name))
    mine = HOST.create()
    try:
        assert cgroups.sweep_stale(HOST) == 1
        assert not any(os.path.exists(os.path.join(p, name)) for p in HOST.parents.values())
        assert all(os.path.isdir(d) for d in mine.dirs.values())  # a live owner's stays
    finally:
        mine.close()


REPL = (
    "import sys\n"
    "hold = []\n"
    "for line in sys.stdin:\n"
    "    if line.strip() == 'grow':\n"
    "        hold.append(bytearray(600 << 20))\n"
    "    print('ack', line.strip(), flush=True)\n"
)


def _ask(proc: subprocess.Popen[bytes], line: str) -> bytes:
    assert proc.stdin and proc.stdout
    proc.stdin.write(f"{line}\n".encode())
    proc.stdin.flush()
    return proc.stdout.readline()


@needs_cgroups
def test_a_long_lived_process_gets_its_own_cgroup(sb: BwrapSandbox) -> None:
    from rl_verifier_sandbox.bwrap.lease import Lease

    job = Job(
        argv=("python", "-u", "-c", REPL),
        limits=Limits(wall_s=10**7, cpu_s=10**7, memory_bytes=256 << 20),
    )
    lease: Lease = sb.lease(job)
    assert HOST is not None and lease.cgroup is not None and lease.mechanism == HOST.mechanism
    with lease.command() as (argv, fds):
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=fds,
            env={},
            start_new_session=True,
        )
    try:
        assert _ask(proc, "one") == b"ack one\n"
        assert _ask(proc, "two") == b"ack two\n"
        assert proc.pid in lease.cgroup.procs()
        usage = lease.usage()
        assert usage is not None and usage.oom_kills == 0 and (usage.cpu_s or 0) > 0
        assert _ask(proc, "grow") == b""  # the REPL is OOM-killed at 256 MiB resident
        proc.wait(timeout=10)
        usage = lease.usage()
        assert usage is not None and usage.oom_kills >= 1
        dirs = list(lease.cgroup.dirs.values())
    finally:
        final = lease.release()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe:
                pipe.close()
    assert final is not None and final.oom_kills >= 1
    assert not any(os.path.exists(d) for d in dirs)
    assert lease.release() is final  # idempotent


@needs_cgroups
def test_releasing_a_lease_kills_the_running_process(sb: BwrapSandbox) -> None:
    before = my_cgroup_dirs()
    job = Job(argv=("python", "-c", "import time; time.sleep(600)"), limits=Limits(wall_s=10**7))
    lease = sb.lease(job)
    with lease.command() as (argv, fds):
        proc = subprocess.Popen(argv, pass_fds=fds, env={}, start_new_session=True)
    assert lease.cgroup is not None
    dirs = list(lease.cgroup.dirs.values())
    lease.release()
    assert proc.wait(timeout=10) != 0
    assert not any(os.path.exists(d) for d in dirs)
    assert my_cgroup_dirs() == before


def test_cgroups_can_be_switched_off() -> None:
    host, why = cgroups.detect("off")
    assert host is None and "disabled" in why
    host, why = cgroups.detect("v3")
    assert host is None and "unknown" in why


# --- finding the cgroup tree (pure functions and a v2 layout on a directory tree) ----------

MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
SELF_CGROUP = """\
8:pids:/user/1
4:memory:/docker/abc/job
2:cpu,cpuacct:/
0::/
"""


def test_mountinfo_and_own_cgroups_are_parsed() -> None:
    mounts = cgroups.parse_mountinfo(MOUNTINFO)
    assert [(m.version, sorted(m.controllers)) for m in mounts] == [
        ("v1", ["cpu", "cpuacct"]),
        ("v1", ["memory"]),
        ("v1", ["pids"]),
        ("v2", []),
    ]
    own = cgroups.parse_self_cgroup(SELF_CGROUP)
    assert own == {
        "pids": "/user/1",
        "memory": "/docker/abc/job",
        "cpu": "/",
        "cpuacct": "/",
        "": "/",
    }
    memory = mounts[1]
    # a mount showing /docker/abc at its mountpoint (a container's view) still finds our group
    assert cgroups._inside(memory, "/docker/abc/job") == "/sys/fs/cgroup/memory/job"
    assert cgroups._inside(memory, "/elsewhere") is None


def test_v2_layout_enables_controllers_and_writes_limits(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    mount = cgroups.Mount("/", str(tmp_path), "v2", frozenset())
    host, why = cgroups.v2_layout([mount])
    assert host is not None and why == ""
    assert host.mechanism == "cgroup-v2" and sorted(host.parents) == ["cpu", "memory", "pids"]
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+pids +cpu"
    cg = host.create(memory_bytes=256 << 20, pids=20)
    job_dir = Path(cg.dirs["memory"])
    assert job_dir.parent == tmp_path and cg.dirs == dict.fromkeys(host.parents, str(job_dir))
    assert (job_dir / "memory.max").read_text() == str(256 << 20)
    assert (job_dir / "pids.max").read_text() == "20"
    assert (job_dir / "memory.oom.group").read_text() == "1"
    assert cg.enter_argv()[-2:] == [str(job_dir / "cgroup.procs"), "--"]  # v2: no "tasks"
    (job_dir / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    (job_dir / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    (job_dir / "pids.events").write_text("max 2\n")
    usage = cg.usage()
    assert (usage.cpu_s, usage.oom_kills, usage.pids_refused) == (1.5, 1, 2)


def test_v2_without_the_needed_controllers_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")
    host, why = cgroups.v2_layout([cgroups.Mount("/", str(tmp_path), "v2", frozenset())])
    assert host is None and "memory/pids" in why
