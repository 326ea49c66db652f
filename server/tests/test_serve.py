"""Starting the server: the listening socket and the launcher."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier.serving.access import is_loopback
from rl_verifier_server.http.auth import collect_keys
from rl_verifier_server.launch import LocalServer, healthy
from rl_verifier_server.serving.data_lock import lock_data_dir, wait_until_free
from rl_verifier_server.serving.serve import bind, run_server


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


def test_an_open_address_without_keys_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="without API keys") as refused:
        run_server(host="0.0.0.0", port=0, data_dir=tmp_path, device="cpu", preload=[])
    assert "--api-key" in str(refused.value) and "\n" not in str(refused.value)


def test_keys_come_from_options_and_the_environment() -> None:
    assert collect_keys(["tml-a1"], " tml-b2 ,tml-a1,, ") == ("tml-a1", "tml-b2")
    for bad in ("secret", "tml-", "tml-has space"):
        with pytest.raises(UserError, match="must start with 'tml-'"):
            collect_keys([bad], None)


def test_loopback_addresses_are_told_apart() -> None:
    for address in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"):
        assert is_loopback(address)
    for address in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.org"):
        assert not is_loopback(address)


def test_one_server_per_data_directory(tmp_path: Path) -> None:
    held = lock_data_dir(tmp_path)
    try:
        with pytest.raises(UserError, match="in use by another rlv serve"):
            lock_data_dir(tmp_path)
    finally:
        held.close()
    lock_data_dir(tmp_path).close()  # free again once the holder is gone


def test_a_run_waits_for_its_previous_server_to_let_go(tmp_path: Path) -> None:
    """rlv train --resume right after a kill: the old embedded server still holds the data
    directory while it finishes its last request; the new one waits for it, not forever."""
    assert wait_until_free(tmp_path, timeout_s=0)  # never used
    held = lock_data_dir(tmp_path)
    assert not wait_until_free(tmp_path, timeout_s=0.3)
    releaser = threading.Timer(0.3, held.close)
    releaser.start()
    try:
        assert wait_until_free(tmp_path, timeout_s=30)
    finally:
        releaser.join()
    lock_data_dir(tmp_path).close()
