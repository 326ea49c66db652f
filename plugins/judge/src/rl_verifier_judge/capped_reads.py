"""Replies read within byte caps: a body or a stream past its cap, or one stream line past
its own, stops the read at once (``TooLong``), so an endpoint that answers without end
costs at most the cap in memory. Bytes are read raw (as sent, after the transfer
encoding): the caller refuses content encodings, so no decoder can multiply them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

HEAD_KEPT = 500  # bytes of an over-long reply kept to show


class TooLong(Exception):
    """A reply past a cap: which part (``body``, ``stream`` or ``stream line``), the cap,
    and the reply's first bytes."""

    def __init__(self, part: str, limit: int, head: bytes = b"") -> None:
        super().__init__(f"{part} longer than {limit} bytes")
        self.part, self.limit, self.head = part, limit, head[:HEAD_KEPT]


async def read_capped(answer: httpx.Response, limit: int) -> bytes:
    """The whole body; ``TooLong`` past ``limit`` bytes (at once where Content-Length
    declares more)."""
    declared = answer.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise TooLong("body", limit)
    data = bytearray()
    async for piece in answer.aiter_raw():
        data += piece
        if len(data) > limit:
            raise TooLong("body", limit, bytes(data[:HEAD_KEPT]))
    return bytes(data)


async def read_head(answer: httpx.Response, limit: int) -> bytes:
    """At most the first ``limit`` bytes of the body (an error reply's start); the rest is
    never read."""
    data = bytearray()
    async for piece in answer.aiter_raw():
        data += piece
        if len(data) >= limit:
            break
    return bytes(data[:limit])


async def stream_lines(answer: httpx.Response, line_limit: int, limit: int) -> AsyncIterator[str]:
    """The lines of an SSE stream (split at ``\\n``, a trailing ``\\r`` dropped);
    ``TooLong`` once the stream passes ``limit`` bytes or one line passes
    ``line_limit``."""
    pending = bytearray()
    total = 0
    async for piece in answer.aiter_raw():
        total += len(piece)
        if total > limit:
            raise TooLong("stream", limit, bytes(pending[:HEAD_KEPT]))
        if b"\n" not in piece:  # only the new bytes are searched: no quadratic rescans
            pending += piece
            if len(pending) > line_limit:
                raise TooLong("stream line", line_limit, bytes(pending[:HEAD_KEPT]))
            continue
        first, *middle, rest = piece.split(b"\n")
        for line in (bytes(pending) + first, *middle):
            if len(line) > line_limit:
                raise TooLong("stream line", line_limit, line)
            yield line.rstrip(b"\r").decode("utf-8", "replace")
        pending = bytearray(rest)
        if len(pending) > line_limit:
            raise TooLong("stream line", line_limit, bytes(pending[:HEAD_KEPT]))
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


__all__ = ["TooLong", "read_capped", "read_head", "stream_lines"]
