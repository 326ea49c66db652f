"""Per-model request ordering: run in ``seq_id`` order, once each.

The SDK numbers each training client's requests 1, 2, 3, ... (creation is 0) and may
re-send one after a timeout. A re-sent ``seq_id`` gets the first one's request id. A
request that arrives ahead of a missing predecessor waits for it briefly, then runs:
the SDK reserves an id even for a call that failed on the client side. A request the
server refused before queueing gives up its ``seq_id`` (``void``), so nothing waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

GAP_WAIT_S = 2.0


class SequencedQueue:
    def __init__(self, dispatch: Callable[[str, Callable[[], object]], None], first: int = 1):
        self._dispatch = dispatch
        self._next = first
        self._seen: dict[int, str] = {}
        self._waiting: dict[int, tuple[str, Callable[[], object]] | None] = {}
        self._gap_timer: asyncio.TimerHandle | None = None

    def lookup(self, seq_id: int) -> str | None:
        """The request id already given to ``seq_id``, if any."""
        return self._seen.get(seq_id)

    def add(self, seq_id: int, request_id: str, work: Callable[[], object]) -> None:
        self._seen[seq_id] = request_id
        if seq_id < self._next:  # late, after its gap was skipped: run it now
            self._dispatch(request_id, work)
            return
        self._waiting[seq_id] = (request_id, work)
        self._pump()

    def void(self, seq_id: int) -> None:
        """``seq_id`` was refused: its successors need not wait for it."""
        if seq_id >= self._next and seq_id not in self._seen:
            self._waiting[seq_id] = None
            self._pump()

    def _pump(self) -> None:
        while self._next in self._waiting:
            item = self._waiting.pop(self._next)
            self._next += 1
            if item is not None:
                self._dispatch(*item)
        if self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None
        if self._waiting:
            loop = asyncio.get_running_loop()
            self._gap_timer = loop.call_later(GAP_WAIT_S, self._skip_gap)

    def _skip_gap(self) -> None:
        self._gap_timer = None
        if self._waiting:
            self._next = min(self._waiting)
            self._pump()
