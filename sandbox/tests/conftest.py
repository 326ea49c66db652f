"""Shared fixtures: one bwrap sandbox and one warm fork-server pool per session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from rl_verifier_sandbox.bwrap import BwrapSandbox
from rl_verifier_sandbox.forkserver import PythonPool

HAVE_BWRAP = shutil.which("bwrap") is not None
IS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="session")
def sb() -> BwrapSandbox:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed")
    sandbox = BwrapSandbox()
    sandbox.check()
    return sandbox


@pytest.fixture(scope="session")
def pool(sb: BwrapSandbox) -> Iterator[PythonPool]:
    with sb.python_pool(size=1) as p:
        yield p
