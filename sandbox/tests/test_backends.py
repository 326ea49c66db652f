"""Backend selection, the process backend, the docker configuration, the Python env."""

from __future__ import annotations

import logging
import shutil
import stat
from pathlib import Path

import pytest

from rl_verifier_sandbox import get_sandbox, pyenv
from rl_verifier_sandbox.api import Job, Limits, Policy, SandboxUnavailable
from rl_verifier_sandbox.bwrap import BwrapSandbox
from rl_verifier_sandbox.docker_backend import container_config
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
    from rl_verifier_sandbox import bwrap

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
    cfg = container_config("img:1", lim, {"A": "b"})
    assert cfg["network_mode"] == "none" and cfg["read_only"] is True
    assert cfg["mem_limit"] == cfg["memswap_limit"] == 512 << 20
    assert cfg["pids_limit"] == 32 and cfg["cap_drop"] == ["ALL"]
    assert cfg["security_opt"] == ["no-new-privileges"] and cfg["user"] == "65534:65534"
    assert cfg["nano_cpus"] == 1_000_000_000
    assert set(cfg["tmpfs"]) == {"/tmp", "/job"} and "size=8388608" in cfg["tmpfs"]["/tmp"]
    assert cfg["environment"]["A"] == "b" and "TINKER_API_KEY" not in cfg["environment"]
    assert {u["name"] for u in cfg["ulimits"]} == {"cpu", "fsize", "nofile", "core"}


def _docker_ok() -> str | None:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001
        return f"no Docker engine reachable: {type(exc).__name__}: {exc}"
    return None


@pytest.mark.skipif(_docker_ok() is not None, reason=str(_docker_ok()))
def test_docker_integration() -> None:
    sb = get_sandbox("docker")
    try:
        r = sb.run(Job(argv=("python", "-c", "import os; print(os.getuid())")))
        assert r.stdout == b"65534\n"
    finally:
        sb.close()


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
    from rl_verifier_sandbox.slots import UidSlots

    other = UidSlots()
    a, b = sb.slots.acquire(), other.acquire()
    try:
        assert a != b
    finally:
        sb.slots.release(a)
        other.release(b)
