"""Dynamic batching of sample requests on the compute thread.

A sample job (a Tinker ``asample``, an OpenAI completion) is queued here rather than run
alone. Each job also queues one drain on the compute thread; the first drain to run takes
every job queued so far (waiting up to a short gather window from the first one's arrival,
and at most ``max_rows`` samples, so a batch stays bounded) and decodes them together, one
batched generation per sampler (model + adapter: different adapters are never mixed into
one forward). Jobs that arrive while a batch runs join the next one.

Order is kept: a drain takes only jobs queued after the compute thread's last other work
(its ``epoch``), so a sample never runs before training work submitted ahead of it
(a ``save_weights_for_sampler`` it depends on) nor after work submitted behind it.

A job fails alone: its preparation (sampler lookup, checks) or its token listener raising
fails it and no other; a cancelled job leaves the batch at the next token.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rl_verifier_server.runtime.types import Cancelled
from rl_verifier_server.scheduling.compute import ComputeThread

if TYPE_CHECKING:  # torch is imported where a model is loaded, not here
    from rl_verifier_server.runtime.decoding import Decoded, DecodeRequest

DEFAULT_WINDOW_S = 0.005  # how long the first job of a batch waits for company
DEFAULT_MAX_ROWS = 64  # samples decoded together, at most (a larger single job runs alone)


@dataclass
class Part:
    """One generation of a job: ``request`` decoded on ``sampling``'s model with sampler
    ``sampler_id`` (None: the base model)."""

    sampling: Any  # runtime.sampling.Sampling
    sampler_id: str | None
    request: DecodeRequest


@dataclass
class SampleJob:
    """``prepare`` (compute thread) names the job's parts; ``finish`` (compute thread)
    turns their sequences, in order, into the job's value. ``rows``: samples it adds."""

    prepare: Callable[[], list[Part]]
    finish: Callable[[list[Any]], object]
    rows: int
    epoch: int = 0
    arrived: float = 0.0
    # whether the job's answer was cancelled; read on the compute thread, so a cancel made
    # on the event loop is seen at once, not when the loop next runs its callbacks
    cancelled: Callable[[], bool] = field(default=lambda: False)
    settle: Callable[[object, BaseException | None], None] = field(default=lambda v, e: None)


class SampleBatches:
    """The queue of sample jobs and the drains that batch them."""

    def __init__(
        self,
        compute: ComputeThread,
        window_s: float = DEFAULT_WINDOW_S,
        max_rows: int = DEFAULT_MAX_ROWS,
    ) -> None:
        self.compute = compute
        self.window_s = window_s
        self.max_rows = max(1, max_rows)
        self._pending: list[SampleJob] = []
        self._arrival = threading.Condition()

    def submit(self, job: SampleJob) -> asyncio.Future[Any]:
        """Queue ``job`` (event loop thread); its value, or its error, comes in the future.
        Cancelling the future cancels the job."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()

        def settle(value: object, error: BaseException | None) -> None:
            def put() -> None:
                if answer.done():
                    return
                if error is not None:
                    answer.set_exception(error)
                else:
                    answer.set_result(value)

            loop.call_soon_threadsafe(put)

        job.cancelled = answer.cancelled
        job.settle = settle
        job.epoch = self.compute.epoch
        job.arrived = time.monotonic()
        with self._arrival:
            self._pending.append(job)
            self._arrival.notify_all()
        epoch = job.epoch
        self.compute.batch_work(lambda: self._drain(epoch))
        return answer

    def _take(self, epoch: int) -> list[SampleJob]:
        """The jobs of ``epoch`` for one batch, after the gather window (compute thread)."""
        with self._arrival:
            while True:
                mine = [job for job in self._pending if job.epoch == epoch]
                if not mine:
                    return []
                rows = sum(job.rows for job in mine)
                left = mine[0].arrived + self.window_s - time.monotonic()
                if rows >= self.max_rows or left <= 0 or self.compute.epoch != epoch:
                    break
                self._arrival.wait(left)
            taken: list[SampleJob] = []
            count = 0
            for job in mine:
                if taken and count + job.rows > self.max_rows:
                    break
                taken.append(job)
                count += job.rows
            self._pending = [job for job in self._pending if job not in taken]
            return taken

    def _drain(self, epoch: int) -> None:
        """Run one batch of the jobs queued in ``epoch`` (compute thread)."""
        groups: dict[tuple[int, str | None], list[Part]] = {}
        for job in self._take(epoch):
            if job.cancelled():
                job.settle(None, Cancelled("the request was cancelled"))
                continue
            try:
                parts = job.prepare()
            except Exception as exc:  # noqa: BLE001 - this job alone fails
                job.settle(None, exc)
                continue
            _listen(job, parts)
            for part in parts:
                groups.setdefault((id(part.sampling), part.sampler_id), []).append(part)
        for group in groups.values():
            try:
                group[0].sampling.run(group[0].sampler_id, [part.request for part in group])
            except Exception as exc:  # noqa: BLE001 - the group's forward failed: all of it
                for part in group:
                    if part.request.on_done is not None:
                        part.request.on_done(exc)


def _listen(job: SampleJob, parts: list[Part]) -> None:
    """Settle ``job`` as soon as its last part is decoded (the batch may go on)."""
    results: list[Decoded | None] = [None] * len(parts)
    left = [len(parts)]

    def done(index: int, result: Decoded) -> None:
        if results[index] is not None:
            return
        results[index] = result
        left[0] -= 1
        if not left[0]:
            complete()

    def complete() -> None:
        failed = next((r for r in results if isinstance(r, Exception)), None)
        if failed is not None:
            job.settle(None, failed)
            return
        try:
            value = job.finish(list(results))
        except Exception as exc:  # noqa: BLE001 - this job alone fails
            job.settle(None, exc)
        else:
            job.settle(value, None)

    for index, part in enumerate(parts):
        part.request.on_done = lambda result, index=index: done(index, result)
        part.request.cancelled = job.cancelled
    if not parts:
        complete()
