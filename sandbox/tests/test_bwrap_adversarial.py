"""Hostile jobs on every isolating backend: bwrap, its fork server, and docker (warm
containers on the real engine)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rl_verifier_sandbox.api import Job, Limits, Policy, Result, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.bwrap.forkserver import PythonPool
from rl_verifier_sandbox.docker.backend import DockerSandbox
from rl_verifier_sandbox.linux import seccomp, slots
from rl_verifier_sandbox.linux.slots import BASE_UID, pids_of_uid

from .conftest import BACKENDS, COLD_BACKENDS, FIXTURE

IS_ROOT = os.geteuid() == 0

# Prints how many processes of the job's own uid exist besides the job and its ancestors.
OTHERS_OF_MY_UID = (
    "import os\nme, up = os.getpid(), set()\np = me\n"
    "while p > 1:\n    up.add(p)\n"
    "    p = int(open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    "def uid(p):\n    try:\n        return os.stat(f'/proc/{p}').st_uid\n"
    "    except OSError:\n        return None\n"
    "print(len([p for p in os.listdir('/proc') if p.isdigit() and int(p) not in up | {1}"
    " and uid(p) == os.getuid()]))"
)


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def processes_of_free_uids() -> dict[int, list[int]]:
    """Live processes of the sandbox uids nobody holds. A uid is held (by a job or a warm
    server of this process, or of another test run on the host) through an flock on its lock
    file, which this takes while it looks; a held uid is skipped."""
    found = {}
    for uid in range(BASE_UID, BASE_UID + 32):
        fd = os.open(os.path.join(slots._lock_dir(), f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            found[uid] = pids_of_uid(uid)
        except BlockingIOError:
            continue
        finally:
            os.close(fd)
    return found


@pytest.fixture(params=BACKENDS)
def any_sb(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(FIXTURE[request.param])
    return sandbox


@pytest.fixture(params=COLD_BACKENDS)
def cold_sb(request: pytest.FixtureRequest) -> Sandbox:
    """bwrap and docker, without the fork server (jobs it hands to bwrap anyway)."""
    sandbox: Sandbox = request.getfixturevalue(FIXTURE[request.param])
    return sandbox


@pytest.fixture
def no_survivors(request: pytest.FixtureRequest, any_sb: Sandbox) -> Callable[[], None]:
    """Asserts that nothing of the previous job is still running."""
    if isinstance(any_sb, DockerSandbox):

        def in_container() -> None:  # the next job in the same warm container sees none
            assert any_sb.run(py(OTHERS_OF_MY_UID)).stdout == b"0\n"

        return in_container
    pool: PythonPool = request.getfixturevalue("pool")

    def on_host() -> None:  # no process of a sandbox uid that is free again (see above)
        if IS_ROOT:
            busy = processes_of_free_uids()
            assert not set(busy) & set(pool.uids)  # the warm servers' uids are held
            assert not any(busy.values()), busy

    return on_host


def test_hello_and_files(any_sb: Sandbox) -> None:
    job = Job(
        argv=("python", "main.py"), files={"main.py": "print(open('d/x').read())", "d/x": b"hi"}
    )
    r = any_sb.run(job)
    assert (r.exit_code, r.stdout, r.timed_out, r.limit_hit) == (0, b"hi\n", False, None)


def test_infinite_loop_hits_deadline(any_sb: Sandbox, no_survivors: Callable[[], None]) -> None:
    r = any_sb.run(py("while True: pass", wall_s=0.5, cpu_s=30))
    assert r.timed_out and r.exit_code is None
    assert 0.45 <= r.wall_s < 1.5
    no_survivors()


def test_sleep_past_deadline(any_sb: Sandbox) -> None:
    t0 = time.monotonic()
    r = any_sb.run(py("import time; time.sleep(30)", wall_s=0.5))
    assert r.timed_out and time.monotonic() - t0 < 2.0


def test_cpu_limit(cold_sb: Sandbox) -> None:
    r = cold_sb.run(py("while True: pass", cpu_s=1, wall_s=5))
    # the kernel sends SIGXCPU on its own tick-sampled count; the CPU time read back after
    # (rusage, cgroup) can be lower on busy cores (0.86 s seen under load): it used CPU, and
    # the CPU limit, not the wall clock, stopped it
    assert r.limit_hit == "cpu" and not r.timed_out and r.cpu_s >= 0.5


def test_fork_bomb_is_limited(any_sb: Sandbox, no_survivors: Callable[[], None]) -> None:
    r = any_sb.run(py("import os\nwhile True:\n    os.fork()", processes=16, wall_s=5))
    assert r.limit_hit == "processes" and not r.timed_out
    time.sleep(0.05)
    no_survivors()
    assert os.waitpid(os.spawnv(os.P_NOWAIT, "/bin/true", ["true"]), 0)[1] == 0  # host forks


def test_processes_limit_is_the_jobs_own(any_sb: Sandbox) -> None:
    """A job allowed 40 processes gets them, whatever limit the previous job had."""
    spawn = (
        "import subprocess\n"
        "ps = [subprocess.Popen(['sleep', '5']) for _ in range({n})]\n"
        "print(len(ps)); [p.kill() for p in ps]"
    )
    small = any_sb.run(py(spawn.format(n=30), processes=8))
    assert small.limit_hit == "processes", small.stderr[-300:]
    large = any_sb.run(py(spawn.format(n=30), processes=40))
    assert large.stdout == b"30\n", large.stderr[-300:]


def test_double_fork_survivor_is_killed(any_sb: Sandbox, no_survivors: Callable[[], None]) -> None:
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(3); open('/tmp/alive', 'w')\n"
        "    os._exit(0)\n"
        "print('parent done')"
    )
    r = any_sb.run(py(code))
    assert r.exit_code == 0 and r.stdout == b"parent done\n"
    no_survivors()
    # the next job sees no process of its uid but itself and its ancestors (init, server)
    assert any_sb.run(py(OTHERS_OF_MY_UID)).stdout == b"0\n"


def test_files_do_not_outlive_the_job(any_sb: Sandbox) -> None:
    write = (
        "import os\n"
        "for d in ('.', '/tmp', '/dev/shm'):\n"
        "    open(os.path.join(d, 'left-behind'), 'w').write('x')\n"
        "os.mkdir('locked'); open('locked/f', 'w'); os.chmod('locked', 0)"
    )
    assert any_sb.run(py(write)).exit_code == 0
    look = "import os; print([os.listdir(d) for d in ('.', '/tmp', '/dev/shm')])"
    assert any_sb.run(py(look)).stdout == b"[[], [], []]\n"


STATE_PATHS = (
    "/pytest.ini", "/conftest.py", "/rlv-x", "/etc/rlv-x", "/opt/rlv-x", "/dev/rlv-x",
    "/dev/pts/rlv-x", "/dev/mqueue/rlv-x", "/dev/shm/rlv-x", "/tmp/rlv-x", "rlv-x",
)  # fmt: skip
LEAVE_STATE = f"""
import ctypes
for path in {STATE_PATHS!r}:
    try:
        open(path, "w").write("[pytest]\\n")
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
libc.semget(0, 1, 0o1600)
libc.msgget(0, 0o1600)
"""
LOOK_FOR_STATE = f"""
import os
left = [p for p in {STATE_PATHS!r} if os.path.exists(p)]
ipc = [len(open(f"/proc/sysvipc/{{k}}").readlines()) - 1 for k in ("shm", "sem", "msg")]
print(left, ipc)
"""


def test_no_state_survives_into_the_next_job(any_sb: Sandbox) -> None:
    """A job that leaves /pytest.ini and /conftest.py on a writable root (the warm pool's
    root tmpfs was, and was never wiped) makes the next, unrelated job's pytest read them.
    Nothing a job writes anywhere, SysV IPC included, reaches the next job."""
    assert any_sb.run(py(LEAVE_STATE)).exit_code == 0
    assert any_sb.run(py(LOOK_FOR_STATE)).stdout == b"[] [0, 0, 0]\n"


def test_every_writable_mount_is_one_the_pool_wipes(sb: BwrapSandbox, pool: PythonPool) -> None:
    """/ and /dev are read-only once the binds are made; what stays writable is exactly the
    fork server's wipe list (/proc and the device nodes aside)."""
    from rl_verifier_sandbox.bwrap import _server_main

    code = (  # the last mount on a path is the one on top
        "top = {}\n"
        "for row in open('/proc/self/mountinfo'):\n"
        "    f = row.split()\n"
        "    kind = f[f.index('-') + 1]\n"
        "    top[f[4]] = 'rw' in f[5].split(',') and kind not in ('proc', 'devtmpfs')\n"
        "print(*[path for path, rw in top.items() if rw])\n"
    )
    for sandbox in (sb, pool):
        writable = sandbox.run(py(code)).stdout.decode().split()
        assert sorted(writable) == sorted(_server_main.WRITABLE)


def test_no_pseudo_terminals(any_sb: Sandbox) -> None:
    """bwrap's and the engine's devpts instances share the kernel's pty limit: one job took
    all 3,071 PTYs and a concurrent job's /dev/ptmx failed with ENOSPC. Jobs get none."""
    code = (
        "import os\n"
        "for path in ('/dev/ptmx', '/dev/pts/ptmx'):\n"
        "    try:\n        os.open(path, os.O_RDWR | os.O_NOCTTY)\n        print('opened')\n"
        "    except OSError as exc:\n        print(exc.strerror)\n"
        "print(os.listdir('/dev/pts'))\n"
    )
    r = any_sb.run(py(code))
    assert r.stdout == b"No such file or directory\nNo such file or directory\n[]\n", r.stderr


@pytest.mark.parametrize("backend", BACKENDS[:2])
def test_host_kernel_command_line_is_hidden(request: pytest.FixtureRequest, backend: str) -> None:
    """On a VM the kernel command line names the hypervisor's vsock ports and its init."""
    sandbox: Sandbox = request.getfixturevalue(FIXTURE[backend])
    r = sandbox.run(py("print(repr(open('/proc/cmdline').read()))"))
    assert r.stdout == b"''\n", r.stderr


def test_memory_bomb(any_sb: Sandbox) -> None:
    r = any_sb.run(py("x = bytearray(2 << 30)", memory_bytes=256 << 20))
    assert r.exit_code != 0 and r.limit_hit == "memory"


def test_huge_file(any_sb: Sandbox) -> None:
    code = "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))"
    r = any_sb.run(py(code, file_bytes=4 << 20))
    assert r.exit_code != 0 and r.limit_hit == "file_size"


def test_gigabytes_of_stdout(any_sb: Sandbox) -> None:
    code = "import os\nwhile True:\n    os.write(1, b'y' * 65536)"
    r = any_sb.run(py(code, stdout_bytes=1 << 16, wall_s=20))
    assert r.limit_hit == "output" and r.stdout_truncated and len(r.stdout) == 1 << 16
    assert not r.timed_out  # the output cap stopped it, not the 20 s deadline


def test_network_unreachable(any_sb: Sandbox) -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        code = (
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('reached')\nexcept OSError:\n    print('unreachable')\n"
            "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n    print('reached')\n"
            "except OSError:\n    print('unreachable')"
        )
        r = any_sb.run(py(code))
    assert r.stdout == b"unreachable\nunreachable\n"


@pytest.fixture(scope="module", params=BACKENDS)
def socket_errnos(request: pytest.FixtureRequest) -> dict[str, int]:
    """socket() of every family but AF_UNIX/AF_INET/AF_INET6 in one job: label -> errno."""
    sandbox: Sandbox = request.getfixturevalue(FIXTURE[request.param])
    r = sandbox.run(py(seccomp.probe_source(seccomp.socket_probes())))
    assert r.exit_code == 0, r.stderr
    out: dict[str, int] = json.loads(r.stdout)
    return out


@pytest.mark.parametrize("family", [*seccomp.SOCKET_FAMILIES_DENIED, "AF_VSOCK | 1 << 32"])
def test_socket_family_is_denied(socket_errnos: dict[str, int], family: str) -> None:
    """AF_VSOCK is not namespaced (a job would share the host's vsock ports); netlink, packet,
    alg and the rest are kernel surface no job needs."""
    assert errno.errorcode.get(socket_errnos[f"socket({family})"]) == "EPERM"


def test_host_env_invisible(any_sb: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tml-secret")
    r = any_sb.run(
        py("import os; print(sorted(os.environ)); print(open('/proc/1/environ').read())")
    )
    assert b"TINKER_API_KEY" not in r.stdout and b"tml-secret" not in r.stdout + r.stderr


def test_policy_env_is_passed(any_sb: Sandbox) -> None:
    job = Job(
        argv=("python", "-c", "import os; print(os.environ['K'])"), policy=Policy(env={"K": "v"})
    )
    assert any_sb.run(job).stdout == b"v\n"


@pytest.fixture
def host_markers() -> Iterator[list[str]]:
    """Files made on the host in the home, temp and current directories."""
    paths = []
    for base in (Path.home(), Path(tempfile.gettempdir()), Path.cwd()):
        fd, path = tempfile.mkstemp(prefix="rlv-marker-", dir=base)
        os.close(fd)
        paths.append(path)
    yield paths
    for path in paths:
        os.unlink(path)


def test_host_dirs_invisible(any_sb: Sandbox, host_markers: list[str]) -> None:
    look = "import os; print([p for p in {!r} if os.path.exists(p)])"
    assert any_sb.run(py(look.format([*host_markers, os.getcwd()]))).stdout == b"[]\n"
    if not isinstance(any_sb, DockerSandbox):  # an image has its own /root, /home and /var
        assert any_sb.run(py(look.format(["/root", "/work", "/home", "/var"]))).stdout == b"[]\n"


def test_cannot_write_outside_work_dir(cold_sb: Sandbox) -> None:
    r = cold_sb.run(
        Job(argv=("sh", "-c", "touch /usr/x; touch /x; mount -o remount,rw /usr; echo $?"))
    )
    assert r.stdout.strip() != b"0" and b"Read-only" in r.stderr
    assert not Path("/usr/x").exists() and not Path("/x").exists()


def test_uid_is_not_root(any_sb: Sandbox) -> None:
    r = any_sb.run(py("import os; print(os.getuid(), os.geteuid())"))
    assert r.exit_code == 0 and 0 not in [int(x) for x in r.stdout.split()]


@pytest.mark.parametrize(
    "code", ["import os; os.kill(os.getppid(), 9)", "import os; os.kill(-1, 9)"]
)
def test_killing_the_parent_spares_the_host(any_sb: Sandbox, code: str) -> None:
    r = any_sb.run(py(code))
    assert isinstance(r, Result)
    assert any_sb.run(py("print(1)")).stdout == b"1\n"  # the sandbox (or server) still works


def test_kill_minus_one_from_shell(cold_sb: Sandbox) -> None:
    r = cold_sb.run(Job(argv=("sh", "-c", "kill -9 -1; echo after")))
    assert isinstance(r, Result)
    assert os.getpid() > 0
    assert cold_sb.run(py("print(1)")).stdout == b"1\n"


def test_symlink_to_host_path_is_not_followed(any_sb: Sandbox) -> None:
    code = "import os; os.symlink('/etc/shadow', 'out.txt'); os.symlink('/root', 'r'); print('ok')"
    r = any_sb.run(py(code))
    assert r.stdout == b"ok\n" and b"root:" not in r.stdout


def test_bad_file_name_is_reported_not_raised(any_sb: Sandbox) -> None:
    r = any_sb.run(Job(argv=("python", "-c", "1"), files={"../evil": "x"}))
    assert r.exit_code is None and b"bad job file name" in r.stderr


def test_stdin_and_exit_code(any_sb: Sandbox) -> None:
    job = Job(
        argv=("python", "-c", "import sys; print(sys.stdin.read()); sys.exit(3)"), stdin=b"abc"
    )
    r = any_sb.run(job)
    assert (r.exit_code, r.stdout) == (3, b"abc\n")


def test_signal_death_reported(cold_sb: Sandbox) -> None:
    r = cold_sb.run(py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    assert r.exit_code is None and r.signal == signal.SIGSEGV


def test_readonly_files_policy(cold_sb: Sandbox) -> None:
    job = Job(argv=("cat", "/opt/data/x"), policy=Policy(readonly_files={"/opt/data/x": "DATA"}))
    assert cold_sb.run(job).stdout == b"DATA"
    write = Job(
        argv=("sh", "-c", "echo x > /opt/data/x; cat /opt/data/x"),
        policy=Policy(readonly_files={"/opt/data/x": "DATA"}),
    )
    r = cold_sb.run(write)
    assert r.stdout == b"DATA" and b"/opt/data/x" in r.stderr, r.stderr
    other = Job(
        argv=("sh", "-c", "ls /opt/data"), policy=Policy(readonly_files={"/opt/data/z": ""})
    )
    assert cold_sb.run(other).stdout == b"z\n"  # the previous job's file is gone


def test_limits_default_fit() -> None:
    assert Limits().wall_s > 0


def test_concurrent_jobs_get_distinct_uids(sb: BwrapSandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    job = py("import os, time; time.sleep(0.3); print(os.getuid())")
    with ThreadPoolExecutor(3) as ex:
        outs = [r.stdout for r in ex.map(sb.run, [job] * 3)]
    assert len(set(outs)) == 3, outs


def test_concurrent_docker_jobs_do_not_meet(docker_sb: DockerSandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    code = (
        "import os, time, uuid\nopen(f'/tmp/{uuid.uuid4()}', 'w')\ntime.sleep(0.3)\n"
        "print(len(os.listdir('/tmp')), len(os.listdir('.')))"
    )
    with ThreadPoolExecutor(3) as ex:
        outs = [r.stdout for r in ex.map(docker_sb.run, [py(code)] * 3)]
    assert outs == [b"1 0\n"] * 3


def test_arun(cold_sb: Sandbox) -> None:
    import asyncio

    assert asyncio.run(cold_sb.arun(py("print(2)"))).stdout == b"2\n"
