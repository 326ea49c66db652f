"""The Docker engine: connecting, the image, what the engine says, containers left behind."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Any

from rl_verifier_sandbox.api import SandboxUnavailable
from rl_verifier_sandbox.docker.image import DEFAULT_IMAGE, IMAGE_ENV, docker_module
from rl_verifier_sandbox.docker.image import connect as connect  # the backend's one way in
from rl_verifier_sandbox.linux.pids import pid_alive

OWNER_LABEL = "rl-verifier-sandbox.owner"  # "<hostname>:<pid>" of the process that made it


def owner() -> str:
    """This process's ``OWNER_LABEL`` value."""
    return f"{socket.gethostname()}:{os.getpid()}"


def require_image(client: Any, image: str) -> None:
    docker = docker_module()

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound as exc:
        how = (
            "build it with `rlv sandbox image build`"
            if image == DEFAULT_IMAGE
            else f"pull or build it, or unset {IMAGE_ENV} for the default image"
        )
        raise SandboxUnavailable(f"docker image {image} is not present: {how}") from exc
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"cannot inspect docker image {image}: {exc}") from exc


def engine_info(client: Any) -> dict[str, Any]:
    try:
        info: dict[str, Any] = client.info()
    except Exception:  # noqa: BLE001 - only used to describe the engine
        return {}
    return info


def reap_stale(client: Any = None) -> int:
    """Kill the sandbox containers that a dead process of this host left behind (a verifier
    worker killed at a deadline); how many. Every new ``DockerSandbox`` does this first."""
    client = client if client is not None else connect()
    host = socket.gethostname()
    killed = 0
    with contextlib.suppress(Exception):
        for container in client.containers.list(filters={"label": OWNER_LABEL}):
            owner_host, _, pid = str(container.labels.get(OWNER_LABEL, "")).rpartition(":")
            if owner_host == host and pid.isdigit() and not pid_alive(int(pid)):
                with contextlib.suppress(Exception):
                    container.kill()
                    killed += 1
    return killed
