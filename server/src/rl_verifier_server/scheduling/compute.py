"""The compute thread: every piece of torch work runs on it, one at a time, in order
(sample requests queued together run as one batch: see ``sample_batches``).

Work submitted as a request gets a future id at once; its outcome (a result, or an error
as ``user`` or ``server`` category) resolves that future when the work is done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from rl_verifier import UserError
from rl_verifier_server.scheduling.futures import FutureTable, Outcome
from rl_verifier_server.scheduling.ordering import SequencedQueue

log = logging.getLogger("rl_verifier_server")
T = TypeVar("T")


class ComputeThread:
    """One worker thread for torch; futures for what it is asked to do."""

    def __init__(self, futures: FutureTable) -> None:
        self.futures = futures
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlv-compute")
        self._tasks: set[asyncio.Task[None]] = set()
        # Counts the work queued other than sample drains: sample jobs queued in the same
        # epoch may be batched together without running ahead of other work.
        self.epoch = 0

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` on the compute thread and return its value (direct endpoints)."""
        self.epoch += 1
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    def dispatch(self, request_id: str, work: Callable[[], object]) -> None:
        """Queue ``work`` now; its outcome resolves the future ``request_id``."""
        self.epoch += 1
        pending = asyncio.get_running_loop().run_in_executor(self._executor, guarded(work))

        async def settle() -> None:
            self.futures.resolve(request_id, await pending)

        self.track(asyncio.get_running_loop().create_task(settle()))

    def track(self, task: asyncio.Task[None]) -> None:
        """Hold ``task`` (one that settles a future) until it is done."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def submit(self, kind: str, work: Callable[[], object]) -> str:
        """Queue ``work`` now as a request of ``kind``; its future id."""
        request_id = self.futures.create(kind)
        self.dispatch(request_id, work)
        return request_id

    def submit_in_order(
        self, queue: SequencedQueue, seq_id: int, kind: str, work: Callable[[], object]
    ) -> str:
        """Queue ``work`` behind ``queue``'s earlier ``seq_id``s; a re-sent ``seq_id`` gets
        the future id it got the first time."""
        known = queue.lookup(seq_id)
        if known is not None:
            return known
        request_id = self.futures.create(kind)
        queue.add(seq_id, request_id, work)
        return request_id

    def later(self, work: Callable[[], None]) -> None:
        """Run ``work`` after what is queued now, for no one's answer."""

        def run() -> Outcome:
            work()
            return Outcome()

        self.epoch += 1
        self._executor.submit(guarded(run))

    def batch_work(self, drain: Callable[[], None]) -> None:
        """Queue a sample drain (``sample_batches``): it leaves the epoch as it is, so
        later sample jobs of this epoch may still join its batch."""

        def run() -> None:
            try:
                drain()
            except Exception:
                log.exception("sample batch failed")

        self._executor.submit(run)


def guarded(work: Callable[[], object]) -> Callable[[], Outcome]:
    """Turn exceptions into error outcomes: user faults as ``user``, the rest as ``server``."""

    def run() -> Outcome:
        try:
            outcome = work()
        except Exception as exc:  # noqa: BLE001 - answered as an error outcome
            return failure(exc)
        assert isinstance(outcome, Outcome)
        return outcome

    return run


def failure(exc: BaseException) -> Outcome:
    """The error outcome of ``exc``: a user fault as ``user``, the rest as ``server``."""
    if isinstance(exc, UserError):
        return Outcome(error=str(exc), category="user")
    log.error("request failed", exc_info=exc)
    return Outcome(error=f"internal error: {type(exc).__name__}: {exc}", category="server")
