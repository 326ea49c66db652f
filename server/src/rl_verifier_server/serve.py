"""Start the server: bind first (a taken port is a clear error), then serve."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
from pathlib import Path

import uvicorn

from rl_verifier.errors import UserError
from rl_verifier_server.app import build_app
from rl_verifier_server.service import Service

log = logging.getLogger("rl_verifier_server")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only then,
    # and without it every keep-alive request waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {host} is already in use (another rlv serve?); "
                "pick another with --port, or --port 0 for any free one"
            ) from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def run_server(
    host: str,
    port: int,
    data_dir: Path,
    device: str | None,
    preload: list[str],
    port_file: Path | None = None,
) -> None:
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot use {data_dir} as the data directory: {exc.strerror}") from None
    service = Service(data_dir, device)

    async def announce() -> None:
        url = f"http://{host}:{bound}"
        print(
            f"rlv serve: listening on {url} (checkpoints in {data_dir})\n"
            f"  export TINKER_BASE_URL={url} TINKER_API_KEY=tml-local",
            file=sys.stderr,
            flush=True,
        )
        if port_file is not None:
            partial = port_file.with_name(port_file.name + ".partial")
            partial.write_text(str(bound))
            partial.replace(port_file)
        for name in preload:
            asyncio.get_running_loop().create_task(warm(service, name))

    app = build_app(service, announce)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=75)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        service.close()


async def warm(service: Service, name: str) -> None:
    try:
        await service.on_compute(lambda: service.hosts.get(name))
    except Exception as exc:  # noqa: BLE001 - a failed preload is reported, not fatal
        log.warning("could not preload %s: %s", name, exc)
