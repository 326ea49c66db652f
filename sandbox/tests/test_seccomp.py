"""The seccomp filter of the bwrap backend: each denied call fails with EPERM inside a job (cold
and on the warm fork server), ordinary Python keeps working, and the probe itself can fail."""

from __future__ import annotations

import errno
import json
import signal

import pytest

from rl_verifier_sandbox.api import Job, Limits, Result, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.bwrap.forkserver import PythonPool
from rl_verifier_sandbox.linux import seccomp

pytestmark = pytest.mark.requires("bwrap")

CALLS = seccomp.probe_calls()
LABELS = [label for label, _, _ in CALLS]
# Calls whose privilege check comes before anything the probe's arguments could fail: an
# unprivileged job gets EPERM from them with or without the filter.
EPERM_ANYWAY = {
    "pivot_root", "fsopen", "fsmount", "fspick", "move_mount",
    "acct", "swapon", "swapoff", "reboot", "syslog", "vhangup",
    "socket(AF_PACKET)", "socket(AF_XDP)",  # CAP_NET_RAW
}  # fmt: skip


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def probe(sb: Sandbox) -> dict[str, int]:
    r = sb.run(py(seccomp.probe_source(CALLS)))
    assert r.exit_code == 0, r.stderr
    out: dict[str, int] = json.loads(r.stdout)
    return out


@pytest.fixture(scope="module")
def cold_errnos(sb: BwrapSandbox) -> dict[str, int]:
    return probe(sb)


@pytest.fixture(scope="module")
def warm_errnos(pool: PythonPool) -> dict[str, int]:
    return probe(pool)


@pytest.fixture(scope="module")
def unfiltered_errnos() -> dict[str, int]:
    sandbox = BwrapSandbox(seccomp=False)
    sandbox.check()
    return probe(sandbox)


def test_the_required_calls_are_denied() -> None:
    required = {
        "ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key",
        "bpf", "perf_event_open", "userfaultfd", "mount", "umount2", "pivot_root", "unshare",
        "setns", "kexec_load", "init_module", "finit_module", "delete_module",
        "open_by_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
    }  # fmt: skip
    assert required <= set(seccomp.DENIED)
    assert required <= set(LABELS)  # every one is probed on this architecture


@pytest.mark.parametrize("label", LABELS)
def test_denied_call_fails_with_eperm_in_a_job(cold_errnos: dict[str, int], label: str) -> None:
    assert errno.errorcode.get(cold_errnos[label]) == "EPERM"


@pytest.mark.parametrize("label", LABELS)
def test_denied_call_fails_with_eperm_on_the_fork_server(
    warm_errnos: dict[str, int], label: str
) -> None:
    assert errno.errorcode.get(warm_errnos[label]) == "EPERM"


def test_the_probe_tells_the_filter_apart(unfiltered_errnos: dict[str, int]) -> None:
    """Without the filter the same probe gets other answers (EFAULT, EBADF, success, ...), so
    the EPERMs above come from the filter, not from missing privileges."""
    assert set(unfiltered_errnos) == set(LABELS)
    same = {k for k, v in unfiltered_errnos.items() if v == errno.EPERM} - EPERM_ANYWAY
    assert not same, {k: errno.errorcode.get(unfiltered_errnos[k]) for k in same}


def test_socket_families_reach_the_kernel_without_the_filter(
    unfiltered_errnos: dict[str, int],
) -> None:
    """What the family rules stop: netlink always opens, AF_VSOCK (where the host has it) opens
    and shares the host's vsock ports, and a high bit in the family is dropped by the kernel."""
    assert unfiltered_errnos["socket(AF_NETLINK)"] == 0
    assert unfiltered_errnos["socket(AF_VSOCK | 1 << 32)"] == unfiltered_errnos["socket(AF_VSOCK)"]


def test_allowed_socket_families_still_open(sb: BwrapSandbox, pool: PythonPool) -> None:
    code = (
        "import socket\n"
        "a, b = socket.socketpair(); a.sendall(b'x'); print(b.recv(1))\n"
        "for family in (socket.AF_INET, socket.AF_INET6):\n"
        "    socket.socket(family, socket.SOCK_DGRAM).close()\n"
        "print('ip sockets open')\n"
    )
    for sandbox in (sb, pool):
        r = sandbox.run(py(code))
        assert r.stdout == b"b'x'\nip sockets open\n", r.stderr


def test_clone3_is_enosys_so_libc_falls_back_to_clone(sb: BwrapSandbox) -> None:
    nr = seccomp.syscall_number("clone3")
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"print(libc.syscall({nr}, None, 0), ctypes.get_errno())"
    )
    assert sb.run(py(code)).stdout.split() == [b"-1", str(errno.ENOSYS).encode()]


def test_ordinary_python_works_under_the_filter(sb: BwrapSandbox, pool: PythonPool) -> None:
    code = (
        "import ctypes, multiprocessing, subprocess, threading, asyncio\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.personality(0xFFFFFFFF) == 0  # querying is allowed\n"
        "assert libc.personality(0) == 0  # so is the default persona\n"
        "t = threading.Thread(target=print, args=('thread',))\n"
        "t.start(); t.join()\n"
        "echo = subprocess.run(['/bin/echo', 'child'], capture_output=True, text=True)\n"
        "print(echo.stdout, end='')\n"
        "with multiprocessing.Pool(2) as p:\n"
        "    print(sum(p.map(abs, [-1, -2, -3])))\n"
        "print(asyncio.run(asyncio.sleep(0, 'async')))\n"
    )
    for sandbox in (sb, pool):
        r = sandbox.run(py(code, processes=32))
        assert (r.exit_code, r.stdout) == (0, b"thread\nchild\n6\nasync\n"), r.stderr


def test_pytest_runs_under_the_filter(sb: BwrapSandbox) -> None:
    test = "import pytest\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n\n"
    files = {"test_x.py": test}
    r = sb.run(Job(argv=("python", "-m", "pytest", "-q", "-p", "no:cacheprovider"), files=files))
    assert r.exit_code == 0 and b"2 passed" in r.stdout, r.stdout


def test_a_foreign_architecture_syscall_kills_the_job(sb: BwrapSandbox) -> None:
    """x32 syscall numbers (bit 30 set) are another ABI: the filter kills the process."""
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall(0x40000000 | 39)  # x32 getpid\n"
        "print('survived')"
    )
    r: Result = sb.run(py(code))
    assert r.signal == signal.SIGSYS and r.stdout == b""


def test_the_filter_is_built_once() -> None:
    assert seccomp.bpf_program() is seccomp.bpf_program()
    assert len(seccomp.bpf_program()) % 8 == 0  # struct sock_filter instructions
