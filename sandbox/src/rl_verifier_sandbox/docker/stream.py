"""The host side of one docker ``exec``: its hijacked socket, demultiplexed and capped.

Docker multiplexes an exec's stdout and stderr on one connection in frames of an 8-byte
header (stream id, 3 zero bytes, big-endian length) plus the payload. ``Demux`` keeps at
most the job's caps of each stream, the last bytes of stderr (where the supervisor's
report is) and raises ``over`` once either stream passes the output kill threshold.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from rl_verifier_sandbox.api import Limits
from rl_verifier_sandbox.jobs.host_process import kill_output_threshold

TAIL = 4096  # bytes of stderr kept from the end, where the report is
REPORT_MAX = 200  # a report line is shorter than this


def raw_socket(handle: Any) -> socket.socket:
    """The socket under what ``APIClient.exec_start(socket=True)`` returns."""
    sock = getattr(handle, "_sock", handle)
    if not isinstance(sock, socket.socket):
        raise TypeError(f"unsupported docker connection {type(handle).__name__}")
    return sock


class Stream:
    """One output stream: the first ``cap`` bytes, how many were seen, the last ``TAIL``."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.seen = 0

    def add(self, data: bytes) -> None:
        room = self.cap + REPORT_MAX - len(self.head)
        if room > 0:
            self.head += data[:room]
        self.seen += len(data)
        self.tail += data[-TAIL:]
        del self.tail[:-TAIL]

    def without_suffix(self, suffix: int) -> tuple[bytes, bool]:
        """(kept bytes, truncated) once the last ``suffix`` bytes (the report) are removed."""
        length = self.seen - suffix
        return bytes(self.head[: min(self.cap, length)]), length > self.cap


class Demux:
    """Splits docker's frames into stdout and stderr; stdout may go to a sink instead."""

    def __init__(self, limits: Limits, stdout_sink: Callable[[bytes], None] | None = None) -> None:
        self.stdout = Stream(limits.stdout_bytes)
        self.stderr = Stream(limits.stderr_bytes)
        self._limits = (
            kill_output_threshold(limits.stdout_bytes),
            kill_output_threshold(limits.stderr_bytes),
        )
        self._sink = stdout_sink
        self._buf = bytearray()
        self.over = False

    def feed(self, data: bytes) -> None:
        self._buf += data
        while len(self._buf) >= 8:
            kind, size = struct.unpack(">BxxxL", self._buf[:8])
            if len(self._buf) < 8 + size:
                return
            payload = bytes(self._buf[8 : 8 + size])
            del self._buf[: 8 + size]
            if kind == 2:
                self.stderr.add(payload)
            elif self._sink is not None:
                self._sink(payload)
                self.stdout.seen += len(payload)
            else:
                self.stdout.add(payload)
        stdout_limit, stderr_limit = self._limits
        if self.stdout.seen > stdout_limit or self.stderr.seen > stderr_limit:
            self.over = True


def feed_stdin(sock: socket.socket, data: bytes, *, close: bool) -> None:
    """Write ``data`` to the exec's stdin, then half-close it (EOF) when ``close``."""
    with contextlib.suppress(OSError):
        sock.sendall(data)
        if close:
            sock.shutdown(socket.SHUT_WR)


def pump(
    sock: socket.socket,
    demux: Demux,
    deadline: float,
    on_over: Callable[[], None],
) -> bool:
    """Read until the exec's output ends (True) or ``deadline`` passes (False). ``on_over``
    is called once, from a new thread, when the output passes the kill threshold."""
    fired = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([sock], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            chunk = sock.recv(1 << 18)
        except OSError:
            return True
        if not chunk:
            return True
        demux.feed(chunk)
        if demux.over and not fired:
            fired = True
            threading.Thread(target=on_over, daemon=True).start()


class PipeSink:
    """Forwards stdout frames into a pipe the caller reads (the two-process relay)."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        self._broken = False

    def __call__(self, data: bytes) -> None:
        if self._broken:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._write_fd, view) :]
        except OSError:
            self._broken = True  # the reader is gone; keep draining the socket

    def close_writer(self) -> None:
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1

    def close_reader(self) -> None:
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
