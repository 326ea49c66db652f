"""Starting the server: the listening socket and the launcher."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rl_verifier.errors import UserError
from rl_verifier_server.launch import LocalServer, healthy
from rl_verifier_server.serve import bind


def test_listening_socket_is_tcp_so_replies_are_not_delayed() -> None:
    # asyncio turns on TCP_NODELAY for accepted sockets only when proto is IPPROTO_TCP;
    # without it each keep-alive request stalls ~40 ms on a delayed ACK.
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_taken_port_is_a_user_error() -> None:
    first = bind("127.0.0.1", 0)
    try:
        with pytest.raises(UserError, match="already in use"):
            bind("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


def test_launcher_reports_a_server_that_dies(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    server = LocalServer(blocker / "data", preload=())
    with pytest.raises(UserError, match="rlv serve exited") as caught:
        server.start(timeout_s=60)
    assert "cannot use" in str(caught.value) and "Traceback" not in str(caught.value)
    assert not healthy("http://127.0.0.1:9")
