"""A command prefix that runs a command in a network namespace with only loopback, so a
local Ray instance listens on 127.0.0.1 (Ray 2.60 replaces a loopback node address with
the machine's routable one when other interfaces exist)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def loopback_only_prefix() -> list[str]:
    """``unshare`` + ``ip`` in front of a command; skips the test where they cannot run."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) for a loopback-only namespace")
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {probe.stderr.decode().strip()}")
    return ["unshare", "--net", "--fork", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def run_cases_loopback_only(
    cases: Path, cwd: Path, env: dict[str, str], timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the pytest file ``cases`` in a loopback-only namespace (Ray there binds
    127.0.0.1) and assert that it ran tests and all of them passed."""
    command = [*loopback_only_prefix(), sys.executable, "-m", "pytest", "-q", "-p",
               "no:cacheprovider", str(cases)]  # fmt: skip
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
    return done
