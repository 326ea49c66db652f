"""Admission control: what the server holds at once stays under its limits.

Every request holds a share of two budgets from its first byte to its answer: the bytes
of request bodies (counted as they arrive, so memory stays bounded however many clients
connect) and the samples waiting or being scored. A request that would overdraw either
is refused with ``Overloaded`` (429), and its ``retry_after_s`` estimates when the work
ahead of it will be done at the recent throughput. Everything runs on the server's one
event loop, so plain counters suffice.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from rl_verifier.reward_server.settings import REQUEST_OVERHEAD_BYTES, RewardServerLimits

THROUGHPUT_WINDOW_S = 30.0
RETRY_BOUNDS_S = (1, 60)


class Overloaded(Exception):
    """The server is full: answer 429 with ``Retry-After: retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooLarge(Exception):
    """The request alone is past a limit: answer 413 (retrying cannot help)."""


class Throughput:
    """Samples answered per second over the last ``THROUGHPUT_WINDOW_S`` seconds."""

    def __init__(self) -> None:
        self._events: deque[tuple[float, int]] = deque()
        self._total = 0

    def record(self, samples: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._events.append((now, samples))
        self._total += samples
        self._expire(now)

    def rate(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        self._expire(now)
        if not self._events:
            return 0.0
        span = max(now - self._events[0][0], 1.0)
        return self._total / span

    def _expire(self, now: float) -> None:
        while self._events and now - self._events[0][0] > THROUGHPUT_WINDOW_S:
            self._total -= self._events.popleft()[1]


class Ticket:
    """One request's share of the budgets; released when its answer is ready."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self.bytes = 0
        self.samples = 0

    def hold_bytes(self, count: int) -> None:
        """Charge ``count`` more body bytes to this request."""
        self._admission.take_bytes(count)
        self.bytes += count

    def admit(self, samples: int) -> None:
        """Admit this request's samples for scoring."""
        self._admission.take_samples(samples)
        self.samples += samples


class Admission:
    """The server's budgets and what is held of them now."""

    def __init__(self, limits: RewardServerLimits) -> None:
        self.limits = limits
        self.held_bytes = 0
        self.pending_samples = 0
        self.open_requests = 0
        self.throughput = Throughput()

    @contextmanager
    def request(self) -> Iterator[Ticket]:
        """Hold a request's share from its first byte to its answer."""
        ticket = Ticket(self)
        self.open_requests += 1
        try:
            ticket.hold_bytes(REQUEST_OVERHEAD_BYTES)
            yield ticket
        finally:
            self.open_requests -= 1
            self.held_bytes -= ticket.bytes
            self.pending_samples -= ticket.samples

    def take_bytes(self, count: int) -> None:
        if self.held_bytes + count > self.limits.max_pending_bytes:
            raise Overloaded(
                "the server holds as many request bodies as its --max-pending-mb allows",
                self.retry_after_s(),
            )
        self.held_bytes += count

    def take_samples(self, count: int) -> None:
        limit = self.limits.max_pending_samples
        if count > limit:
            raise TooLarge(
                f"the batch holds {count} samples, more than this server's "
                f"--max-pending-samples ({limit}); split it"
            )
        if self.pending_samples + count > limit:
            raise Overloaded(
                f"{self.pending_samples} samples are pending and this batch would take "
                f"them past --max-pending-samples ({limit})",
                self.retry_after_s(),
            )
        self.pending_samples += count

    def finished(self, samples: int) -> None:
        """Count samples answered, for the throughput behind Retry-After."""
        self.throughput.record(samples)

    def retry_after_s(self) -> int:
        """Seconds until the pending samples are done at the recent throughput."""
        low, high = RETRY_BOUNDS_S
        rate = self.throughput.rate()
        if rate <= 0:
            return low
        return int(min(max(math.ceil(self.pending_samples / rate), low), high))
