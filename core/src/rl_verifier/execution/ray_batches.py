"""The Ray executor's queue of samples waiting for an actor, taken in batches.

Each sample waits as an :class:`Item` (its future is its verdict). A batch holds samples
of one verifier and one deadline, sized so its work in the actor takes about
``target_s`` (from the measured cost per sample, starting at one sample and at most
twice the largest batch so far), and never more than an even share of what waits. A
sample sent again after a lost actor goes alone (``solo``), so a crash or a hang is
pinned on its sample.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass, field

from rl_verifier.base.contracts import Completion, Status, Task, Verdict
from rl_verifier.execution.batch_calls import batch_verdicts
from rl_verifier.execution.verifier_calls import Message

COST_WEIGHT = 0.3  # weight of the newest batch in the running cost per sample


@dataclass(slots=True)
class Item:
    """One sample waiting for (or in) a batch."""

    task: Task
    completion: Completion
    timeout_s: float
    future: asyncio.Future[Verdict]
    solo: bool = False
    restarts: int = 0

    def settle(self, verdict: Verdict) -> None:
        """Give the sample its verdict (once; a caller that left is not answered)."""
        if not self.future.done():
            self.future.set_result(verdict)


@dataclass
class BatchQueue:
    """Samples waiting for one verifier's actors, and the batch size that suits it."""

    max_batch: int
    target_s: float
    lanes: int
    cost_s: float | None = None
    peak: int = 1
    waiting: deque[Item] = field(default_factory=deque)

    def size(self) -> int:
        """Samples for the next batch: about ``target_s`` of work, growing gradually."""
        if self.cost_s is None:
            return 1
        fits = int(self.target_s / max(self.cost_s, 1e-7))
        return max(1, min(fits, self.max_batch, 2 * self.peak))

    def observe(self, samples: int, busy_s: float) -> None:
        """Fold a batch's measured time into the cost per sample."""
        if samples <= 0:
            return
        cost = busy_s / samples
        old = self.cost_s
        self.cost_s = cost if old is None else old + COST_WEIGHT * (cost - old)

    def take(self) -> list[Item]:
        """The next batch (empty when nothing waits): a lone ``solo`` sample, or up to
        :meth:`size` samples with the first one's deadline."""
        while self.waiting and self.waiting[0].future.done():
            self.waiting.popleft()
        if not self.waiting:
            return []
        first = self.waiting.popleft()
        if first.solo:
            return [first]
        share = math.ceil((len(self.waiting) + 1) / max(self.lanes, 1))
        limit = min(self.size(), share)
        batch = [first]
        while self.waiting and len(batch) < limit:
            item = self.waiting[0]
            if item.solo or item.timeout_s != first.timeout_s:
                break
            self.waiting.popleft()
            if not item.future.done():
                batch.append(item)
        self.peak = max(self.peak, len(batch))
        return batch

    def put_back(self, items: list[Item], solo: bool = False, restarted: bool = False) -> None:
        """Queue ``items`` again, first in line and in their order."""
        for item in reversed(items):
            if item.future.done():
                continue
            item.solo = item.solo or solo
            item.restarts += restarted
            self.waiting.appendleft(item)


def settle_batch(queue: BatchQueue, items: list[Item], outcome: Message, who: str) -> int | None:
    """Settle what a batch answer judged (``who`` names the worker kind in errors) and
    teach ``queue`` its cost; the position of the sample that ran past its deadline (the
    caller retires the worker and sends the samples after it again), or None."""
    verdicts = batch_verdicts(outcome)
    stopped: int | None = outcome["timed_out"]
    for item, verdict in zip(items, verdicts, strict=False):
        item.settle(verdict)
    queue.observe(len(verdicts), outcome["busy_s"])
    if stopped is None:
        for item in items[len(verdicts) :]:
            item.settle(Verdict.errored(f"verifier {who} answered fewer samples than sent"))
        return None
    timeout_s = items[stopped].timeout_s
    items[stopped].settle(Verdict(status=Status.TIMEOUT, error=f"no verdict within {timeout_s}s"))
    return stopped


async def stop_batches(
    drains: list[asyncio.Task[None]], queues: list[BatchQueue], who: str
) -> None:
    """Cancel the tasks draining ``queues`` and settle every sample still waiting in them
    as ``error`` (``who``: the executor, named in the message)."""
    for drain in drains:
        drain.cancel()
    await asyncio.gather(*drains, return_exceptions=True)
    stopped = Verdict.errored(f"{who} stopped before this sample ran")
    for queue in queues:
        while queue.waiting:
            queue.waiting.popleft().settle(stopped)
