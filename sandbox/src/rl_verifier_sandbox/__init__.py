"""Isolated execution of untrusted, model-written code for rl-verifier plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rl_verifier_sandbox.api import Job, Limits, Policy, Result, Sandbox, SandboxUnavailable

__all__ = [
    "Job",
    "Limits",
    "Policy",
    "Result",
    "Sandbox",
    "SandboxUnavailable",
    "get_python_pool",
    "get_sandbox",
]

if TYPE_CHECKING:
    from rl_verifier_sandbox.forkserver import PythonPool

BACKENDS = ("auto", "bwrap", "process", "docker")


def get_sandbox(backend: str = "auto", *, image: str | None = None) -> Sandbox:
    """Return a working backend. ``auto`` means bwrap or SandboxUnavailable (never a silent
    fallback to the non-isolating ``process`` backend, which must be asked for by name).
    ``image``: the docker backend's image (default: ``$RLV_SANDBOX_IMAGE`` or the image
    ``rlv sandbox image build`` makes)."""
    if backend in ("auto", "bwrap"):
        from rl_verifier_sandbox.bwrap import BwrapSandbox

        sb = BwrapSandbox()
        sb.check()
        return sb
    if backend == "process":
        from rl_verifier_sandbox.process import ProcessSandbox

        return ProcessSandbox()
    if backend == "docker":
        from rl_verifier_sandbox.docker_backend import DockerSandbox

        docker = DockerSandbox(image)
        try:
            docker.check()
        except BaseException:
            docker.close()
            raise
        return docker
    raise SandboxUnavailable(f"unknown sandbox backend {backend!r}; choose from {BACKENDS}")


def get_python_pool(size: int = 1, tmp_bytes: int = 256 << 20) -> PythonPool:
    """The fast path for Python jobs: warm bwrap fork servers (see ``forkserver``)."""
    from rl_verifier_sandbox.bwrap import BwrapSandbox

    sb = get_sandbox("bwrap")
    assert isinstance(sb, BwrapSandbox)
    return sb.python_pool(size=size, tmp_bytes=tmp_bytes)
