"""The seccomp filter every bwrap job (and every fork-server job) runs under.

A deny list in the spirit of Docker's default profile: everything is allowed except the calls
below, which fail with ``EPERM`` (so does ``socket``/``socketpair`` for any address family but
``SOCKET_FAMILIES_ALLOWED``; ``clone3``: ``ENOSYS``, so libc falls back to ``clone``, whose
flags the filter can inspect). Syscalls of another architecture (i386 ``int 0x80``, x32) kill
the process. The BPF program is built once with libseccomp (``pyseccomp``) and handed to
bwrap as ``--seccomp FD``; bwrap installs it just before it executes the job.
"""

from __future__ import annotations

import errno
import functools
import importlib
import json
import os
from typing import Any

from rl_verifier_sandbox.api import Job, Sandbox, SandboxUnavailable

# Each fails with EPERM inside a job.
DENIED: tuple[str, ...] = (
    # reading or steering other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    # kernel keyrings
    "keyctl",
    "add_key",
    "request_key",
    # large kernel attack surface
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # mounts and namespaces (old and new mount API)
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    # kernel modules and kexec
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    # file handles (bypass path permissions)
    "open_by_handle_at",
    # host-wide state
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "fanotify_init",
    "iopl",
    "ioperm",
    "vhangup",
)
# personality(2) may only query (0xffffffff) or set the default PER_LINUX (0).
PERSONALITY_ALLOWED = (0x0, 0xFFFFFFFF)
# clone(2) may not create namespaces (the flags Docker's profile refuses).
CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
# socket(2)/socketpair(2) may only make these families (the network namespace cuts the IP ones
# off). Every other family fails with EPERM: AF_VSOCK, for one, is not namespaced at all (a job
# would share the host's vsock ports, the road to a hypervisor's services).
SOCKET_FAMILIES_ALLOWED = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
# Linux's other families (include/linux/socket.h), each probed by name; any number above
# AF_INET6 is denied, named or not.
SOCKET_FAMILIES_DENIED = {
    "AF_UNSPEC": 0, "AF_AX25": 3, "AF_IPX": 4, "AF_APPLETALK": 5, "AF_NETROM": 6,
    "AF_BRIDGE": 7, "AF_ATMPVC": 8, "AF_X25": 9, "AF_ROSE": 11, "AF_DECnet": 12,
    "AF_NETBEUI": 13, "AF_SECURITY": 14, "AF_KEY": 15, "AF_NETLINK": 16, "AF_PACKET": 17,
    "AF_ASH": 18, "AF_ECONET": 19, "AF_ATMSVC": 20, "AF_RDS": 21, "AF_SNA": 22, "AF_IRDA": 23,
    "AF_PPPOX": 24, "AF_WANPIPE": 25, "AF_LLC": 26, "AF_IB": 27, "AF_MPLS": 28, "AF_CAN": 29,
    "AF_TIPC": 30, "AF_BLUETOOTH": 31, "AF_IUCV": 32, "AF_RXRPC": 33, "AF_ISDN": 34,
    "AF_PHONET": 35, "AF_IEEE802154": 36, "AF_CAIF": 37, "AF_ALG": 38, "AF_NFC": 39,
    "AF_VSOCK": 40, "AF_KCM": 41, "AF_QIPCRTR": 42, "AF_SMC": 43, "AF_XDP": 44, "AF_MCTP": 45,
}  # fmt: skip
SOCKET_CALLS = ("socket", "socketpair")
INSTALL_HINT = "install Debian's libseccomp2 and `pip install pyseccomp`"


class SeccompUnavailable(SandboxUnavailable):
    """libseccomp cannot build the filter here; the message says why."""


def _pyseccomp() -> Any:  # the bindings ship no type information
    try:
        return importlib.import_module("pyseccomp")
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: no libseccomp.so
        raise SeccompUnavailable(f"seccomp filter unavailable ({exc}); {INSTALL_HINT}") from None


def syscall_number(name: str) -> int | None:
    """The native syscall number of ``name``, or None where this architecture lacks it."""
    nr = int(_pyseccomp().resolve_syscall(_pyseccomp().Arch.NATIVE, name))
    return nr if nr >= 0 else None


@functools.cache
def bpf_program() -> bytes:
    """The filter as a classic-BPF program (what ``bwrap --seccomp`` reads); built once."""
    sc = _pyseccomp()
    deny = sc.ERRNO(errno.EPERM)
    filt = sc.SyscallFilter(sc.ALLOW)
    filt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for name in DENIED:
        nr = syscall_number(name)
        if nr is not None:
            filt.add_rule(deny, nr)
    for mask, value in personality_denials():
        filt.add_rule(deny, "personality", sc.Arg(0, sc.MASKED_EQ, mask, value))
    for flag in CLONE_NAMESPACE_FLAGS.values():
        filt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    ops = {"EQ": sc.EQ, "GT": sc.GT}
    for call in SOCKET_CALLS:
        for op, value in socket_family_denials():
            filt.add_rule(deny, call, sc.Arg(0, ops[op], value))
    with os.fdopen(os.memfd_create("rlv-seccomp"), "w+b") as fh:
        filt.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def personality_denials() -> list[tuple[int, int]]:
    """(mask, value) pairs whose union is every 32-bit persona except 0 and 0xffffffff.

    libseccomp allows one comparison per argument in a rule, and rules are OR-ed. A persona is
    neither 0 nor all ones exactly when it has a set bit and a clear bit: split on bit 0.
    """
    assert PERSONALITY_ALLOWED == (0x0, 0xFFFFFFFF)
    out = []
    for bit in range(1, 32):
        out.append((1 | 1 << bit, 1 << bit))  # bit 0 clear, another bit set
        out.append((1 | 1 << bit, 1))  # bit 0 set, another bit clear
    return out


def socket_family_denials() -> list[tuple[str, int]]:
    """(op, value) comparisons of the family argument (all 64 bits, so high bits cannot smuggle
    a family past them) whose union is every family but ``SOCKET_FAMILIES_ALLOWED``."""
    allowed = sorted(SOCKET_FAMILIES_ALLOWED.values())
    gaps = [("EQ", v) for v in range(allowed[-1]) if v not in allowed]
    return [*gaps, ("GT", allowed[-1])]


def memfd() -> int:
    """A fresh fd holding the program, positioned at 0 (bwrap reads it to the end)."""
    fd = os.memfd_create("rlv-seccomp", 0)
    data = memoryview(bpf_program())
    while data:
        data = data[os.write(fd, data) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# Arguments that make each probe harmless where the filter is missing (bad fds, NULL pointers,
# pid 0); a call not listed gets six zeros.
PROBE_ARGS: dict[str, tuple[int, ...]] = {
    "ptrace": (16, 0),  # PTRACE_ATTACH to pid 0: ESRCH without the filter
    "userfaultfd": (1,),  # UFFD_USER_MODE_ONLY: allowed unprivileged without the filter
    "syslog": (10, 0, 0),  # SYSLOG_ACTION_SIZE_BUFFER
    "fanotify_init": (0x200, 0),  # FAN_REPORT_FID: allowed unprivileged without the filter
    "setns": (-1, 0),
    "io_uring_enter": (-1, 0, 0, 0, 0, 0),
    "io_uring_register": (-1, 0, 0, 0),
    "pidfd_getfd": (-1, -1, 0),
    "fsconfig": (-1, 0, 0, 0, 0),
    "fsmount": (-1, 0, 0),
    "fspick": (-1, 0, 0),
    "open_tree": (-1, 0, 0),
    "move_mount": (-1, 0, -1, 0, 0),
    "mount_setattr": (-1, 0, 0, 0, 0),
    "finit_module": (-1, 0, 0),
    "open_by_handle_at": (-1, 0, 0),
    "quotactl_fd": (-1, 0, 0, 0),
}
CLONE_SIGHAND = 0x00000800  # without CLONE_VM the kernel refuses it (EINVAL) before any clone


def probe_calls(names: tuple[str, ...] = DENIED) -> list[tuple[str, int, tuple[int, ...]]]:
    """(label, number, args) for a probe: each denied call, a non-default personality and
    clone with each namespace flag (plus CLONE_SIGHAND, so no child is ever created)."""
    calls = []
    for name in names:
        nr = syscall_number(name)
        if nr is not None:
            calls.append((name, nr, PROBE_ARGS.get(name, (0,) * 6)))
    calls.append(("personality(READ_IMPLIES_EXEC)", _nr("personality"), (0x0400000,)))
    calls.append(("personality(PER_LINUX32)", _nr("personality"), (0x0008,)))
    for label, flag in CLONE_NAMESPACE_FLAGS.items():
        calls.append((f"clone({label})", _nr("clone"), (flag | CLONE_SIGHAND, 0, 0, 0, 0)))
    calls += socket_probes()
    return calls


SOCK_STREAM, SOCK_DGRAM = 1, 2
# A type each family accepts without privileges, so that without the filter the call works
# (or fails with something other than EPERM); families not listed get SOCK_DGRAM.
PROBE_SOCKET_TYPE = {"AF_VSOCK": SOCK_STREAM, "AF_XDP": 3, "AF_PACKET": SOCK_DGRAM}


def socket_probes() -> list[tuple[str, int, tuple[int, ...]]]:
    """socket() of each denied family, of one past the last named family, and of AF_VSOCK
    with a high bit set (the kernel reads an int: it would see AF_VSOCK); socketpair() once."""
    nr = _nr("socket")
    out: list[tuple[str, int, tuple[int, ...]]] = [
        (f"socket({name})", nr, (family, PROBE_SOCKET_TYPE.get(name, SOCK_DGRAM), 0))
        for name, family in SOCKET_FAMILIES_DENIED.items()
    ]
    beyond = max(SOCKET_FAMILIES_DENIED.values()) + 1
    vsock = SOCKET_FAMILIES_DENIED["AF_VSOCK"]
    out.append((f"socket({beyond})", nr, (beyond, SOCK_DGRAM, 0)))
    out.append(("socket(AF_VSOCK | 1 << 32)", nr, (vsock | 1 << 32, SOCK_STREAM, 0)))
    out.append(("socketpair(AF_VSOCK)", _nr("socketpair"), (vsock, SOCK_STREAM, 0, 0)))
    return out


def _nr(name: str) -> int:
    nr = syscall_number(name)
    assert nr is not None, name
    return nr


def probe_source(calls: list[tuple[str, int, tuple[int, ...]]]) -> str:
    """Python source run inside a job: prints ``{label: errno}`` as JSON (0: the call worked)."""
    return (
        "import ctypes, json\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = {}\n"
        f"for label, nr, args in {json.dumps(calls)}:\n"
        "    ctypes.set_errno(0)\n"
        "    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])\n"
        "    out[label] = ctypes.get_errno() if rc == -1 else 0\n"
        "print(json.dumps(out))\n"
    )


def check_denied(sb: Sandbox) -> tuple[bool, str]:
    """Run the probe as a job on ``sb``: (every denied call failed with EPERM, one-line detail)."""
    calls = probe_calls()
    r = sb.run(Job(argv=("python", "-c", probe_source(calls))))
    try:
        got: dict[str, int] = json.loads(r.stdout)
    except ValueError:
        tail = r.stderr.decode(errors="replace").strip()[-200:]
        return False, f"probe job failed: {tail or r.exit_code}"
    allowed = sorted(label for label, err in got.items() if err != errno.EPERM)
    detail = f"{len(got) - len(allowed)}/{len(got)} denied calls fail with EPERM"
    if allowed:
        more = f" and {len(allowed) - 5} more" if len(allowed) > 5 else ""
        detail += f"; allowed: {', '.join(allowed[:5])}{more}"
    return not allowed, detail


__all__ = [
    "DENIED",
    "SOCKET_FAMILIES_ALLOWED",
    "SOCKET_FAMILIES_DENIED",
    "SeccompUnavailable",
    "bpf_program",
    "check_denied",
    "memfd",
    "probe_calls",
    "probe_source",
]
