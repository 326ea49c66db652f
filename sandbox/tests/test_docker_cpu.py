"""The docker backend caps a job's total CPU time (every process of it) through the
container's cgroup counter, like bwrap's job cgroup; ``RLIMIT_CPU`` stays per process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rl_verifier_sandbox.api import Job, Limits
from rl_verifier_sandbox.docker import launch
from rl_verifier_sandbox.docker.backend import DockerSandbox

# Tries to stop every process it can see (the supervisor and its CPU watcher are root: it
# cannot), then spins in four processes.
SPIN_FOUR = """
import os, signal
stopped = 0
for name in os.listdir('/proc'):
    if name.isdigit() and int(name) != os.getpid():
        try:
            os.kill(int(name), signal.SIGSTOP)
            stopped += 1
        except OSError:
            pass
print(stopped, flush=True)
for _ in range(3):
    if os.fork() == 0:
        break
while True:
    pass
"""


def spin(code: str, cpu_s: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(cpu_s=cpu_s, wall_s=60))


def test_four_spinning_processes_share_one_cpu_budget(docker_sb: DockerSandbox) -> None:
    r = docker_sb.run(spin(SPIN_FOUR, cpu_s=1))
    assert r.stdout == b"0\n"  # nothing outside the job could be signalled
    assert (r.limit_hit, r.timed_out, r.signal) == ("cpu", False, 9), r
    assert 1.0 <= r.cpu_s < 2.5  # RLIMIT_CPU alone lets each process use 1 s: 4 s in all
    assert docker_sb.run(Job(argv=("python", "-c", "print(1)"))).stdout == b"1\n"


def test_the_doctor_names_the_cgroup_for_cpu(docker_sb: DockerSandbox) -> None:
    mechanisms = docker_sb.mechanisms()
    assert mechanisms["cpu"] == mechanisms["memory"]
    assert mechanisms["cpu"].startswith("cgroup-v")


def no_counter(name: str, script: str) -> str:
    for counter in launch.CPU_COUNTERS:
        script = script.replace(counter, f"{counter}.missing")
    return script


def no_bash(name: str, script: str) -> str:
    return (
        script.replace("command -v bash", "command -v rlv-no-bash")
        if name == "SUPERVISOR_SH"
        else script
    )


@pytest.mark.parametrize("without", [no_counter, no_bash])
def test_without_a_cgroup_watch_cpu_falls_back_to_the_rlimit(
    docker_sb: DockerSandbox, monkeypatch: pytest.MonkeyPatch, without: Callable[[str, str], str]
) -> None:
    """Where the container's CPU counter cannot be read, or the image has no bash for the
    watcher, each process still has RLIMIT_CPU, the deadline holds, and the doctor says
    which mechanism applies."""
    for name in ("SUPERVISOR_SH", "WATCH_SH"):
        monkeypatch.setattr(launch, name, without(name, getattr(launch, name)))
    sandbox = DockerSandbox(max_idle=1)
    try:
        assert sandbox.mechanisms()["cpu"] == "rlimit"
        r = sandbox.run(spin("while True: pass", cpu_s=1))
        assert (r.limit_hit, r.timed_out) == ("cpu", False), r
        r = sandbox.run(Job(argv=("sleep", "30"), limits=Limits(wall_s=0.5)))
        assert r.timed_out and r.signal == 9, r
    finally:
        sandbox.close()
