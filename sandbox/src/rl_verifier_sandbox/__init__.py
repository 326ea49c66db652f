"""Isolated execution of untrusted, model-written code for rl-verifier plugins.

The names below are the public API (see docs/sandbox.md); the modules behind them are private
and may change. ``BACKENDS`` is the backend table (``backends``): ``get_sandbox``, the doctor
and plugin settings (``BackendChoice``) read it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_verifier_sandbox.api import (
    SERVER_TMP_BYTES,
    WARM_PYTEST,
    AsyncLiveProcess,
    BadJob,
    Job,
    Limits,
    LiveProcess,
    Policy,
    Result,
    Sandbox,
    SandboxUnavailable,
)
from rl_verifier_sandbox.backends import BACKENDS, Backend, Options, backend_names, open_backend
from rl_verifier_sandbox.setting import BackendChoice

if TYPE_CHECKING:
    from rl_verifier_sandbox.bwrap.forkserver import PythonPool
    from rl_verifier_sandbox.bwrap.lease import Lease
    from rl_verifier_sandbox.bwrap.poolstats import PoolStats
    from rl_verifier_sandbox.linux.cgroups import CgroupUsage

__all__ = [
    "BACKENDS",
    "AsyncLiveProcess",
    "Backend",
    "BackendChoice",
    "BadJob",
    "CgroupUsage",
    "Job",
    "Lease",
    "Limits",
    "LiveProcess",
    "Options",
    "Policy",
    "PoolStats",
    "PythonPool",
    "Result",
    "Sandbox",
    "SandboxUnavailable",
    "backend_names",
    "get_python_pool",
    "get_sandbox",
]

# Public names whose modules load on first use: every ``rlv`` command imports this package.
_LAZY = {
    "CgroupUsage": "rl_verifier_sandbox.linux.cgroups",
    "Lease": "rl_verifier_sandbox.bwrap.lease",
    "PoolStats": "rl_verifier_sandbox.bwrap.poolstats",
    "PythonPool": "rl_verifier_sandbox.bwrap.forkserver",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


def get_sandbox(
    backend: str = "auto", *, image: str | None = None, uid_slots: int | None = None
) -> Sandbox:
    """Return a working backend from the table. ``auto`` means bwrap or SandboxUnavailable
    (never a silent fallback to the non-isolating ``process`` backend, which must be asked for
    by name). ``image``: the docker backend's image (default: ``$RLV_SANDBOX_IMAGE`` or the
    image ``rlv sandbox image build`` makes); ``uid_slots``: how many uids the bwrap backend
    may hold (concurrent jobs and live processes; default 32)."""
    return open_backend(backend, Options(image=image, uid_slots=uid_slots))


def get_python_pool(
    size: int = 1,
    tmp_bytes: int = SERVER_TMP_BYTES,
    *,
    max_size: int | None = None,
    readonly_files: Mapping[str, str | bytes] | None = None,
    warm: tuple[str, ...] = WARM_PYTEST,
) -> PythonPool:
    """The fast path for Python jobs and live processes: warm bwrap fork servers (see
    ``forkserver``). ``size`` start now, up to ``max_size`` when all are busy;
    ``readonly_files`` are mounted in every server (jobs that ask for exactly those take the
    fast path); ``warm``: what the servers import before their first job (``pytest`` with its
    default plugins, paths of ``readonly_files`` that are modules)."""
    from rl_verifier_sandbox.bwrap.backend import BwrapSandbox

    sb = get_sandbox("bwrap")
    assert isinstance(sb, BwrapSandbox)
    return sb.python_pool(
        size=size, tmp_bytes=tmp_bytes, max_size=max_size, readonly_files=readonly_files, warm=warm
    )
