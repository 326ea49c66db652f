"""What every backend gives a job process: its base environment and its rlimits."""

from __future__ import annotations

import resource

from rl_verifier_sandbox.api import UNLIMITED_CPU_S, Limits

# The variables every job sees (before ``policy.env``), on every backend.
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
EXTRA_PROCS = 3  # outer bwrap, bwrap's pid-1 monitor, and setpriv/prlimit exec chain


def rlimit_args(limits: Limits, *, nproc: bool, address_space: bool = True) -> list[str]:
    """``prlimit`` options for one job (the limits survive exec and the uid switch). A value
    above this process's own hard limit is lowered to it (raising needs CAP_SYS_RESOURCE).
    ``address_space=False`` leaves RLIMIT_AS alone (a cgroup limits resident memory instead)."""
    cpu = max(1, int(limits.cpu_s + 0.999))
    args = [
        "prlimit",
        f"--cpu={cpu}:{cpu + 1}" if limits.cpu_s < UNLIMITED_CPU_S else "--cpu=unlimited",
    ]
    if address_space:
        args.append(f"--as={_within_hard(resource.RLIMIT_AS, limits.memory_bytes)}")
    args += [
        f"--fsize={_within_hard(resource.RLIMIT_FSIZE, limits.file_bytes)}",
        f"--nofile={_within_hard(resource.RLIMIT_NOFILE, limits.open_files)}",
        "--core=0",
    ]
    if nproc:
        procs = _within_hard(resource.RLIMIT_NPROC, limits.processes + EXTRA_PROCS)
        args.append(f"--nproc={procs}")
    return [*args, "--"]


def _within_hard(which: int, value: int) -> int:
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)
