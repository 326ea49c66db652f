"""Backend selection, the process backend, the docker configuration, the Python env."""

from __future__ import annotations

import json
import logging
import shutil
import stat
from pathlib import Path

import pytest

from rl_verifier_sandbox import get_sandbox
from rl_verifier_sandbox.api import Job, Limits, Policy, SandboxUnavailable
from rl_verifier_sandbox.bwrap import pyenv
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.docker.backend import container_config
from rl_verifier_sandbox.docker.launch import EXTRA_PIDS
from rl_verifier_sandbox.docker.layout import Layout
from rl_verifier_sandbox.process import ProcessSandbox


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def test_auto_is_bwrap_or_unavailable() -> None:
    if shutil.which("bwrap"):
        sb = get_sandbox()
        assert sb.name == "bwrap" and sb.isolates
    else:
        with pytest.raises(SandboxUnavailable):
            get_sandbox()


def test_auto_never_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from rl_verifier_sandbox.bwrap import backend as bwrap

    bwrap._probe.cache_clear()
    with pytest.raises(SandboxUnavailable, match="not found"):
        BwrapSandbox(bwrap="/nonexistent/bwrap").check()


def test_unknown_backend() -> None:
    with pytest.raises(SandboxUnavailable, match="unknown"):
        get_sandbox("nope")


def test_process_backend_warns_and_runs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        sb = get_sandbox("process")
    assert not sb.isolates and "DOES NOT ISOLATE" in caplog.text
    r = sb.run(Job(argv=("python", "-c", "import os; print(os.listdir('.'))"), files={"a": "1"}))
    assert r.stdout == b"['a']\n"
    r = sb.run(py("import time; time.sleep(30)", wall_s=0.3))
    assert r.timed_out and r.wall_s < 1.5
    r = sb.run(py("import os\nwhile True: os.write(1, b'z' * 65536)", stdout_bytes=1024))
    assert r.limit_hit == "output" and len(r.stdout) == 1024
    assert isinstance(sb, ProcessSandbox)


def test_docker_container_config() -> None:
    lim = Limits(memory_bytes=512 << 20, processes=32, tmp_bytes=8 << 20)
    layout = Layout(ro_dirs=("/tests",), binds=(("/srv/real", "/srv/link"),))
    cfg = container_config("img:1", lim, layout, owner="host:1")
    assert cfg["network_mode"] == "none" and cfg["read_only"] is True
    assert cfg["mem_limit"] == cfg["memswap_limit"] == 512 << 20
    assert cfg["pids_limit"] == 32 + EXTRA_PIDS and cfg["init"] is True
    assert cfg["cap_drop"] == ["ALL"] and set(cfg["cap_add"]) == {"SETUID", "SETGID", "KILL"}
    assert cfg["security_opt"][0] == "no-new-privileges" and cfg["user"] == "0:0"
    profile = json.loads(cfg["security_opt"][1].removeprefix("seccomp="))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert {"ptrace", "io_uring_setup", "unshare"} <= set(profile["syscalls"][0]["names"])
    assert cfg["nano_cpus"] == 1_000_000_000 and cfg["shm_size"] == 8 << 20
    assert (
        set(cfg["tmpfs"]) == {"/tmp", "/job", "/dev/pts"} and "size=8388608" in cfg["tmpfs"]["/tmp"]
    )
    assert cfg["tmpfs"]["/dev/pts"].startswith("ro,")  # no PTYs
    assert "uid=65534" in cfg["tmpfs"]["/job"] and "mode=0700" in cfg["tmpfs"]["/job"]
    assert cfg["mounts"] == [
        {
            "Type": "tmpfs",
            "Target": "/tests",
            "TmpfsOptions": {"SizeBytes": 8 << 20, "Mode": 0o755},
        },
        {"Type": "bind", "Source": "/srv/real", "Target": "/srv/link", "ReadOnly": True},
    ]
    assert cfg["environment"] == {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    assert cfg["labels"]["rl-verifier-sandbox.owner"] == "host:1"


def test_site_dir_is_world_readable_and_outside_root(tmp_path: Path) -> None:
    site = pyenv.build_site_dir(tmp_path / "cache")
    assert (site / "pytest").is_dir() and (site / "_server_main.py").is_file()
    assert stat.S_IMODE(site.stat().st_mode) == 0o755
    assert pyenv.build_site_dir(tmp_path / "cache") == site  # cached


def test_prefix_python_bound_at_opt_python(sb: BwrapSandbox) -> None:
    alt = BwrapSandbox(python=pyenv.prefix_python("/usr"), slots=sb.slots)
    r = alt.run(Job(argv=("python", "-c", "import sys, pytest; print(sys.executable)")))
    assert r.stdout == b"/opt/python/bin/python3\n", r.stderr


def test_python_false_hides_site(sb: BwrapSandbox) -> None:
    job = Job(argv=("sh", "-c", "ls /opt/rlv-site 2>&1; true"), policy=Policy(python=False))
    assert b"No such file" in sb.run(job).stdout


def test_uid_slots_are_distinct_across_instances(sb: BwrapSandbox) -> None:
    from rl_verifier_sandbox.linux.slots import UidSlots

    other = UidSlots()
    a, b = sb.slots.acquire(), other.acquire()
    try:
        assert a != b
    finally:
        sb.slots.release(a)
        other.release(b)
