"""Scoring one request's batch through the ``Scorer``: by its deadline, and no longer
than its client waits.

Each sample is its own ``Scorer.ascore`` call, so samples finished by the deadline keep
their rows and only the rest come back as ``timeout``. Cancelling (the deadline, or a
client that went away) reaches the scorer's own loop, where the process executor kills
the workers of unfinished checks with everything they started.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from starlette.types import Receive

from rl_verifier.contracts import Score, Status, VerifierRef
from rl_verifier.engine import Sample
from rl_verifier.scorer import Scorer

T = TypeVar("T")


def failed_row(
    sample: Sample, ref: VerifierRef, status: Status, message: str, elapsed: float
) -> Score:
    """A row for a sample the verifier never judged: ``timeout`` or ``error``."""
    return Score(
        task_id=sample.task.id,
        sample_index=sample.index,
        reward=0.0,
        status=status,
        verifier=ref,
        elapsed_s=elapsed,
        error=message,
    )


async def score_request(
    scorer: Scorer,
    ref: VerifierRef,
    samples: Sequence[Sample],
    deadline_s: float,
    problems: Mapping[int, str] | None = None,
) -> list[Score]:
    """One row per sample, in order. Samples in ``problems`` are ``error`` rows; samples
    unscored after ``deadline_s`` are ``timeout`` rows."""
    problems = problems or {}
    start = time.perf_counter()
    jobs: dict[int, asyncio.Future[Score]] = {
        position: asyncio.ensure_future(scorer.ascore(sample.task, sample.completion))
        for position, sample in enumerate(samples)
        if position not in problems
    }
    try:
        late = (await asyncio.wait(jobs.values(), timeout=deadline_s))[1] if jobs else set()
    finally:
        for job in jobs.values():
            job.cancel()  # no-op for finished ones; the rest stop where they are
    if late:
        await asyncio.wait(late)  # each settles: cancelled, or finished just in time
    elapsed = time.perf_counter() - start
    rows = []
    for position, sample in enumerate(samples):
        if position in problems:
            rows.append(failed_row(sample, ref, Status.ERROR, problems[position], 0.0))
            continue
        job = jobs[position]
        if job.cancelled():
            message = (
                f"the request's deadline of {deadline_s:g}s passed before this sample was scored"
            )
            rows.append(failed_row(sample, ref, Status.TIMEOUT, message, elapsed))
        elif job.exception() is not None:
            rows.append(failed_row(sample, ref, Status.ERROR, _describe(job.exception()), elapsed))
        else:
            rows.append(job.result().model_copy(update={"sample_index": sample.index}))
    return rows


def _describe(exc: BaseException | None) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has gone away (the request body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(work: Awaitable[T], receive: Receive) -> tuple[bool, T | None]:
    """Run ``work`` while watching the connection: ``(True, result)``, or ``(False, None)``
    when the client went away first (``work`` is then cancelled)."""
    running = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await asyncio.wait({running, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not running.done():
            running.cancel()
            await asyncio.wait({running})  # its own cleanup runs before the answer
    if running.cancelled():
        return False, None
    return True, running.result()
