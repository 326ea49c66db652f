"""Newline-framed messages on pipes: read with a deadline and a size cap, write with a deadline."""

from __future__ import annotations

import os
import select
import time


class Deadline(Exception):
    """The wall-clock deadline passed while waiting."""


class TooLong(Exception):
    """A line exceeded the cap."""


class LineReader:
    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.buffer = bytearray()
        self.closed = False

    def readline(self, deadline: float) -> bytes | None:
        """The next line (without its newline), or None at end of stream."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) > self.cap:
                raise TooLong(f"line longer than {self.cap} bytes")
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise Deadline
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise Deadline
            chunk = os.read(self.fd, 1 << 16)
            if chunk:
                self.buffer += chunk
            else:
                self.closed = True


# What one write may carry once select() says the fd is writable without blocking: a pipe
# then has a free page (the peer may have shrunk it to one with F_SETPIPE_SZ), a unix socket
# (docker's attach stream) three quarters of its send buffer.
WRITE_CHUNK = 4096


def write_all(fd: int, data: bytes, deadline: float) -> bool:
    """Write ``data`` by ``deadline`` (else raise ``Deadline``); False when the reader has gone.

    The fd stays blocking (docker's stream is read by another thread); each write is one
    chunk the fd has room for, so a reader that never reads costs its own deadline, not ours.
    """
    view = memoryview(data)
    try:
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise Deadline
            view = view[os.write(fd, view[:WRITE_CHUNK]) :]
    except OSError:
        return False
    return True
