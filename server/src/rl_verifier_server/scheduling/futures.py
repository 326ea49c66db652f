"""Request futures: submitted work gets an id at once; ``retrieve_future`` long-polls it.

A request still pending when the long poll ends is answered as hosted Tinker answers it:
HTTP 408 with ``queue_state`` in the body, which the SDK re-polls at once and quietly. (A
``{"type": "try_again"}`` body with status 200 is re-polled too, but the SDK logs a warning
for each: "Retrying request ... because of try_again", once per poll of every slow step.)
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from rl_verifier_server.base.testhooks import long_poll_s

LONG_POLL_S = 30.0  # as hosted Tinker; the SDK waits 45 s for one poll, re-polls on 408
KEEP_RESULTS_S = 3600.0

log = logging.getLogger("rl_verifier_server")


@dataclass
class Outcome:
    """A finished request: a JSON result, a protobuf result, or an error."""

    json: dict[str, Any] | None = None
    proto: bytes | None = None
    error: str | None = None
    category: str = "user"


@dataclass
class Pending:
    kind: str
    created: float = field(default_factory=time.monotonic)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: Outcome | None = None


class FutureTable:
    """Futures by request id; results are kept for an hour so retried polls find them."""

    def __init__(self) -> None:
        self._items: dict[str, Pending] = {}

    def create(self, kind: str) -> str:
        self._expire()
        request_id = uuid.uuid4().hex
        self._items[request_id] = Pending(kind)
        return request_id

    def resolve(self, request_id: str, outcome: Outcome) -> None:
        item = self._items.get(request_id)
        if item is not None and item.outcome is None:
            item.outcome = outcome
            item.done.set()
            if outcome.error is not None:
                log.warning(
                    "%s request %s failed (%s error): %s",
                    item.kind,
                    request_id,
                    outcome.category,
                    outcome.error,
                )

    def known(self, request_id: str) -> bool:
        return request_id in self._items

    async def wait(self, request_id: str, timeout_s: float | None = None) -> Outcome | None:
        """The outcome, or ``None`` when it is still pending after ``timeout_s`` (default:
        the long poll)."""
        item = self._items[request_id]
        try:
            await asyncio.wait_for(item.done.wait(), timeout_s or long_poll_s(LONG_POLL_S))
        except TimeoutError:
            return None
        return item.outcome

    def _expire(self) -> None:
        cutoff = time.monotonic() - KEEP_RESULTS_S
        stale = [k for k, v in self._items.items() if v.outcome is not None and v.created < cutoff]
        for key in stale:
            del self._items[key]
