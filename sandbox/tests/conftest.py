"""Shared fixtures: one bwrap sandbox and one warm fork-server pool per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_verifier_sandbox.bwrap import BwrapSandbox
from rl_verifier_sandbox.forkserver import PythonPool

IS_ROOT = os.geteuid() == 0


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
