"""What only the docker backend has: mount layouts, warm and fresh containers, live sessions,
containers left by dead processes, the image setting and ``rlv sandbox image build``."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

import pytest
from click.testing import CliRunner

from rl_verifier.cli.app import cli
from rl_verifier_sandbox import plugin
from rl_verifier_sandbox.api import BadJob, Job, Limits, SandboxUnavailable
from rl_verifier_sandbox.docker import image
from rl_verifier_sandbox.docker.backend import DockerSandbox, container_config
from rl_verifier_sandbox.docker.engine import OWNER_LABEL
from rl_verifier_sandbox.docker.layout import Layout, plan

SEEN = {"/opt": "open", "/etc": "open", "/root": "closed", "/srv": "open", "/tmp": "open"}


def probe(paths: list[str]) -> dict[str, str]:
    return {p: SEEN.get(p, "missing") for p in paths}


def py(code: str, **limits: Any) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))


def container_ids(sb: DockerSandbox) -> set[str]:
    return {c.id for c in sb._client.containers.list(filters={"label": OWNER_LABEL})}


def test_readonly_files_go_to_new_directories() -> None:
    files = ["/tests/a.py", "/tests/sub/b.py", "/opt/data/x", "/harness/h.py"]
    assert plan(files, (), probe) == Layout(ro_dirs=("/harness", "/opt/data", "/tests"))
    for bad in ("/etc/passwd", "/x", "relative/y"):
        with pytest.raises(BadJob):
            plan([bad], (), probe)


def test_readonly_paths_need_a_traversable_image_directory(tmp_path: Any) -> None:
    assert plan([], (str(tmp_path),), probe).binds == ((str(tmp_path), str(tmp_path)),)
    with pytest.raises(BadJob, match="cannot be traversed"):
        plan([], (str(tmp_path),), lambda paths: dict.fromkeys(paths, "closed"))


def test_missing_image_is_reported_with_the_way_to_get_it(
    docker_sb: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(image.IMAGE_ENV, "rl-verifier-sandbox:no-such-tag")
    with pytest.raises(SandboxUnavailable, match=r"no-such-tag is not present.*RLV_SANDBOX_IMAGE"):
        DockerSandbox()
    monkeypatch.delenv(image.IMAGE_ENV)
    assert DockerSandbox(max_idle=1).image == image.DEFAULT_IMAGE


def test_the_image_comes_from_the_config_key_or_the_environment(
    docker_sb: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pytest verifier's ``docker_image`` setting wins over ``$RLV_SANDBOX_IMAGE``, which
    wins over the built image; jobs run in the image named."""
    pytest_plugin = pytest.importorskip("rl_verifier_pytest")
    alias = "rl-verifier-sandbox:test-alias"
    docker_sb._client.images.get(docker_sb.image).tag(alias)
    try:
        monkeypatch.setenv(image.IMAGE_ENV, "rl-verifier-sandbox:no-such-tag")
        verifier = pytest_plugin.PytestVerifier({"backend": "docker", "docker_image": alias})
        sandbox = verifier.sandbox()
        try:
            assert isinstance(sandbox, DockerSandbox) and sandbox.image == alias
            assert sandbox.run(py("print(1)")).stdout == b"1\n"
            [idle] = sandbox._idle
            assert docker_sb._client.containers.get(idle.id).attrs["Config"]["Image"] == alias
        finally:
            sandbox.close()
        with pytest.raises(SandboxUnavailable, match="no-such-tag"):
            pytest_plugin.PytestVerifier({"backend": "docker"}).sandbox()
        monkeypatch.setenv(image.IMAGE_ENV, alias)
        from_env = DockerSandbox(max_idle=1)
        from_env.close()
        assert from_env.image == alias
    finally:
        docker_sb._client.images.remove(alias)


def test_fresh_container_per_job_leaves_nothing(docker_sb: DockerSandbox) -> None:
    fresh = DockerSandbox(reuse=False)
    before = container_ids(docker_sb)
    try:
        code = "print(open('/proc/self/cgroup').read().split('/')[-1].strip())"
        ids = {fresh.run(py(code)).stdout.strip().decode() for _ in range(2)}
        assert len(ids) == 2 and all(len(i) == 64 for i in ids)  # two different containers
        assert not ids & container_ids(docker_sb) and container_ids(docker_sb) <= before
    finally:
        fresh.close()


def test_close_kills_the_containers(docker_sb: DockerSandbox) -> None:
    sb = DockerSandbox()
    sb.run(py("print(1)"))
    mine = set(sb._all)
    assert mine and mine <= container_ids(docker_sb)
    sb.close()
    assert not mine & container_ids(docker_sb)


def test_containers_of_dead_processes_are_removed(docker_sb: DockerSandbox) -> None:
    dead = f"{socket.gethostname()}:{4 << 22}"  # above pid_max: never alive
    config = container_config(docker_sb.image, Limits(), owner=dead)
    orphan = docker_sb._client.containers.run(**config)
    DockerSandbox(max_idle=1).close()
    assert orphan.id not in container_ids(docker_sb)


def test_memory_limit_is_the_jobs_own(docker_sb: DockerSandbox) -> None:
    touch = "b = bytearray(160 << 20)\nprint('ok')"
    assert docker_sb.run(py(touch, memory_bytes=96 << 20)).limit_hit == "memory"
    assert docker_sb.run(py(touch, memory_bytes=512 << 20)).stdout == b"ok\n"
    assert docker_sb.run(py(touch, memory_bytes=96 << 20)).limit_hit == "memory"


def test_background_process_holding_stdout_does_not_stall(docker_sb: DockerSandbox) -> None:
    r = docker_sb.run(Job(argv=("sh", "-c", "sleep 30 & echo done"), limits=Limits(wall_s=20)))
    assert (r.exit_code, r.stdout, r.timed_out) == (0, b"done\n", False)
    assert r.wall_s < 10


def test_session_talks_both_ways(docker_sb: DockerSandbox) -> None:
    session = docker_sb.open_session(Job(argv=("cat",), files={"x": "1"}))
    os.write(session.stdin_fd, b"hello\n")
    out = b""
    end = time.monotonic() + 10
    while not out.endswith(b"\n") and time.monotonic() < end:
        out += os.read(session.stdout_fd, 100)
    assert out == b"hello\n"
    assert session.finish() == 0 and session.stderr == b""


def test_image_build_does_nothing_when_the_image_exists(docker_sb: DockerSandbox) -> None:
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "image", "build"])
    assert res.exit_code == 0 and "already present" in res.output, res.output


def test_doctor_probes_every_limit_on_docker(docker_sb: DockerSandbox) -> None:
    plugin.register_commands(cli)
    before = container_ids(docker_sb)
    res = CliRunner().invoke(cli, ["sandbox", "doctor", "--backend", "docker", "--json"])
    assert res.exit_code == 0, res.output
    checks = {c["name"]: c for c in json.loads(res.output)["checks"]}
    assert all(c["ok"] for c in checks.values()), checks
    limits = {"memory", "process", "cpu", "file_size", "open_files", "tmp_size"}
    assert {f"{name}_limit" for name in limits} | {"output_cap", "wall_deadline"} <= set(checks)
    assert {"nothing_survives", "readonly_files", "network_off", "uid_not_root"} <= set(checks)
    assert checks["memory_limit"]["mechanism"].startswith("cgroup-v")
    assert checks["cpu_limit"]["mechanism"] == checks["memory_limit"]["mechanism"]
    assert checks["syscall_filter"]["mechanism"] == "seccomp"  # the deny list, probed in a job
    assert container_ids(docker_sb) <= before  # the doctor's containers are gone


def test_doctor_without_an_engine_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "doctor", "--backend", "docker"])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit | None), res.exception
    assert "no  docker" in res.output and "does not work here" in res.output


def test_sysv_ipc_does_not_outlive_the_job(docker_sb: DockerSandbox) -> None:
    make = (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "print(libc.shmget(0, 4096, 0o1600) >= 0, libc.semget(0, 1, 0o1600) >= 0)"
    )
    assert docker_sb.run(py(make)).stdout == b"True True\n"
    look = "print([len(open(f'/proc/sysvipc/{k}').readlines()) for k in ('shm', 'sem')])"
    assert docker_sb.run(py(look)).stdout == b"[1, 1]\n"  # the header lines only


def test_a_container_that_died_while_idle_is_replaced(docker_sb: DockerSandbox) -> None:
    sb = DockerSandbox()
    try:
        assert sb.run(py("print(1)")).stdout == b"1\n"
        [idle] = sb._idle
        sb._client.api.kill(idle.id)
        assert sb.run(py("print(2)")).stdout == b"2\n"
        assert idle.id not in sb._all
    finally:
        sb.close()
