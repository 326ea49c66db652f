"""Read newline-framed messages from a pipe with a deadline and a size cap."""

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


def write_all(fd: int, data: bytes) -> bool:
    """Write ``data``; False when the reader has gone."""
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError:
        return False
    return True
