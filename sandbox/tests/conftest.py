"""Shared fixtures: one bwrap sandbox and one warm fork-server pool per session, and one warm
docker sandbox on the real engine (skipped, with one reason, where no engine answers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_verifier_sandbox.api import SandboxUnavailable
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox
from rl_verifier_sandbox.bwrap.forkserver import PythonPool
from rl_verifier_sandbox.docker.backend import DockerSandbox

IS_ROOT = os.geteuid() == 0
NO_ENGINE_HINT = "as root, `make test` starts one (tools/with-dockerd.sh) and builds the image"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the bwrap sandbox are skipped, with one reason, where bwrap is missing."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and "sb" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.requires("bwrap"))


@pytest.fixture(scope="session")
def sb() -> BwrapSandbox:
    sandbox = BwrapSandbox()
    sandbox.check()
    return sandbox


@pytest.fixture(scope="session")
def pool(sb: BwrapSandbox) -> Iterator[PythonPool]:
    with sb.python_pool(size=1) as p:
        yield p


@pytest.fixture(scope="session")
def docker_sb() -> Iterator[DockerSandbox]:
    """Warm containers of the default image. Where no engine (or image) is available, every
    test using it is skipped with the same reason (the failure is cached for the session)."""
    try:
        sandbox = DockerSandbox()
    except SandboxUnavailable as exc:
        pytest.skip(f"docker backend unavailable: {exc} ({NO_ENGINE_HINT})")
    try:
        sandbox.check()
    except BaseException:
        sandbox.close()
        raise
    yield sandbox
    sandbox.close()


# The sandboxes a backend-neutral test runs on: bwrap (cold), its fork server, docker (warm).
BACKENDS = [
    pytest.param("bwrap", marks=pytest.mark.requires("bwrap")),
    pytest.param("forkserver", marks=pytest.mark.requires("bwrap")),
    pytest.param("docker"),
]
COLD_BACKENDS = [BACKENDS[0], BACKENDS[2]]
FIXTURE = {"bwrap": "sb", "forkserver": "pool", "docker": "docker_sb"}
