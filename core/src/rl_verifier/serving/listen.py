"""Listening sockets for local servers: bound before anything is printed, errors in one line."""

from __future__ import annotations

import errno
import socket

from rl_verifier.base.errors import UserError


def bind_listener(host: str, port: int, what: str = "rlv") -> socket.socket:
    """A listening TCP socket on ``host:port``; a taken port is a ``UserError``."""
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
                f"port {port} on {host} is already in use (another {what}?); "
                "pick another with --port, or --port 0 for any free one"
            ) from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
