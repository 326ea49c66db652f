"""Start the server: bind first (a taken port is a clear error), then serve.

Before serving: refuse a non-loopback address without API keys, take the data directory's
lock (one server per data directory) and clean up what a killed server left there.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from rl_verifier import UserError
from rl_verifier.cli_support import (
    bind_listener,
    is_loopback,
    signals_end_quietly,
    url_for,
    uvicorn_server,
)
from rl_verifier.internal import write_text
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.http.auth import KEYS_VARIABLE
from rl_verifier_server.models.catalog import AllowedModels
from rl_verifier_server.serving.app import build_app
from rl_verifier_server.serving.data_lock import lock_data_dir
from rl_verifier_server.state.service import Service

GRACEFUL_SHUTDOWN_S = 10  # on SIGTERM: requests in flight get this long, then the server exits
log = logging.getLogger("rl_verifier_server")


def bind(host: str, port: int) -> socket.socket:
    """The server's listening socket; a taken port is one line."""
    return bind_listener(host, port, "rlv serve")


def run_server(
    host: str,
    port: int,
    data_dir: Path,
    device: str | None,
    preload: list[str],
    port_file: Path | None = None,
    api_keys: Sequence[str] = (),
    models_dir: Path | None = None,
    limits: ServerLimits | None = None,
) -> None:
    if models_dir is not None and not models_dir.expanduser().is_dir():
        raise UserError(f"--models-dir {models_dir} is not a directory")
    sock = bind(host, port)
    address, bound = sock.getsockname()[:2]
    if not api_keys and not is_loopback(address):
        sock.close()
        raise UserError(
            f"refusing to serve on {host} without API keys: anyone who reaches it could "
            f"train, sample and read checkpoints; pass --api-key (or {KEYS_VARIABLE}), "
            "or bind to 127.0.0.1"
        )
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = lock_data_dir(data_dir)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot use {data_dir} as the data directory: {exc.strerror}") from None
    except UserError:
        sock.close()
        raise
    configure_logging()
    service = Service(data_dir, device, limits=limits, models=AllowedModels(preload, models_dir))
    service.store.recover()

    async def announce() -> None:
        url = url_for(host, bound)
        key_hint = (
            "  # and TINKER_API_KEY: one of the --api-key keys"
            if api_keys
            else " TINKER_API_KEY=tml-local"
        )
        print(
            f"rlv serve: listening on {url} (checkpoints in {data_dir})\n"
            f"  export TINKER_BASE_URL={url}{key_hint}",
            file=sys.stderr,
            flush=True,
        )
        if port_file is not None:
            write_text(port_file, str(bound))
        for name in preload:
            asyncio.get_running_loop().create_task(warm(service, name))

    app = build_app(service, announce, api_keys)
    try:
        with signals_end_quietly():  # a graceful stop on SIGTERM exits 0
            uvicorn_server(app, graceful_s=GRACEFUL_SHUTDOWN_S).run(sockets=[sock])
    finally:
        service.close()
        lock.close()


def configure_logging() -> None:
    """The server's own messages (failed requests, ended sessions, expired checkpoints) on
    stderr, once."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s rlv serve %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


async def warm(service: Service, name: str) -> None:
    try:
        await service.compute.run(lambda: service.hosts.get(name))
    except Exception as exc:  # noqa: BLE001 - a failed preload is reported, not fatal
        log.warning("could not preload %s: %s", name, exc)
