"""The doctor names what enforces each limit on bwrap: the job cgroup, rlimits, seccomp, ..."""

from __future__ import annotations

import pytest

from rl_verifier_sandbox import doctor
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.linux import cgroups

pytestmark = pytest.mark.requires("bwrap")
HOST = cgroups.host_cgroups()
VOCABULARY = {"cgroup-v1", "cgroup-v2", "rlimit", "seccomp", "namespace", "host"}


def test_every_check_names_its_mechanism(sb: BwrapSandbox) -> None:
    checks = {c.name: c for c in doctor.run_checks(sb)}
    checks["syscall_filter"] = doctor._probe_syscalls(sb)
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert {c.mechanism for c in checks.values()} <= VOCABULARY
    cgroup = HOST.mechanism if HOST else "rlimit"
    assert checks["memory_limit"].mechanism == cgroup
    assert checks["cpu_limit"].mechanism == cgroup
    assert checks["process_limit"].mechanism == (cgroup if HOST else "rlimit")
    assert checks["file_size_limit"].mechanism == "rlimit"
    assert checks["network_off"].mechanism == "namespace"
    assert checks["wall_deadline"].mechanism == "host"
    assert checks["syscall_filter"].mechanism == "seccomp"
    assert "denied calls fail with EPERM" in checks["syscall_filter"].detail


def test_without_cgroups_the_doctor_says_rlimit() -> None:
    sandbox = BwrapSandbox(cgroups=False)
    sandbox.check()
    mech = sandbox.mechanisms()
    assert (mech["memory"], mech["cpu"], mech["syscalls"]) == ("rlimit", "rlimit", "seccomp")


def test_an_unfiltered_sandbox_fails_the_syscall_check() -> None:
    sandbox = BwrapSandbox(seccomp=False)
    check = doctor._probe_syscalls(sandbox)
    assert not check.ok and "allowed: " in check.detail
    assert sandbox.mechanisms()["syscalls"] == "none"
