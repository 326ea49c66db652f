"""Shared fixtures: one verifier on the real bwrap sandbox, the docker engine check, and
task builders."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rl_verifier import Score, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier
from rl_verifier_pytest.tasks import example_tasks
from rl_verifier_sandbox import SandboxUnavailable, get_sandbox

# The backends the attack and contract suites run on; docker skips, with one reason, where
# no engine (or no image) is available.
BACKENDS = [pytest.param("bwrap", marks=pytest.mark.requires("bwrap")), pytest.param("docker")]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the real sandbox are skipped, with one reason, where bwrap is missing."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and "verifier" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.requires("bwrap"))


@pytest.fixture(scope="session")
def verifier() -> PytestVerifier:
    v = PytestVerifier({"backend": "bwrap", "run_timeout_s": 5.0})
    v.sandbox()  # fail loudly here if bwrap is unusable
    return v


@pytest.fixture(scope="session")
def docker_ready() -> None:
    try:
        get_sandbox("docker").close()
    except SandboxUnavailable as exc:
        hint = "as root, `make test` starts an engine (tools/with-dockerd.sh) and builds the image"
        pytest.skip(f"docker backend unavailable: {exc} ({hint})")


class KeptOpen(PytestVerifier):
    """Keeps its sandbox (warm containers) across ``score_once`` calls, which close the
    verifier after every batch; a worker process likewise keeps its verifier open."""

    async def close(self) -> None:
        pass

    def shutdown(self) -> None:
        asyncio.run(super().close())


def backend_verifier(request: pytest.FixtureRequest, **config: Any) -> Iterator[KeptOpen]:
    """A verifier on ``request.param``'s backend, once that backend is known to work."""
    request.getfixturevalue("docker_ready" if request.param == "docker" else "verifier")
    verifier = KeptOpen({"backend": request.param, **config})
    yield verifier
    verifier.shutdown()


@pytest.fixture(scope="module", params=BACKENDS)
def fast(request: pytest.FixtureRequest) -> Iterator[PytestVerifier]:
    """The attack suites' verifier: each backend, short runs."""
    yield from backend_verifier(request, run_timeout_s=2.0)


@pytest.fixture(scope="module")
def fast_single(fast: PytestVerifier) -> Iterator[PytestVerifier]:
    """``fast``'s settings and backend, in the opt-in single-process mode."""
    verifier = KeptOpen({**fast.config.model_dump(), "pytest_mode": "single-process"})
    yield verifier
    verifier.shutdown()


@pytest.fixture(scope="session")
def tasks() -> dict[str, Task]:
    return {task.id: task for task in example_tasks()}


def fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\n"


def score(verifier: PytestVerifier, task: Task, code: str, **config: Any) -> Score:
    v = PytestVerifier({**verifier.config.model_dump(), **config}) if config else verifier
    [result] = score_once(v, [(task, fenced(code))])
    return result
