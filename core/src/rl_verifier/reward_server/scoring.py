"""Scoring one request's batch through the ``Scorer``: by its deadline, and no longer
than its client waits.

Each sample is its own ``Scorer.ascore`` call, so samples finished by the deadline keep
their rows and only the rest come back as ``timeout``. Under a reward with a group
verifier, a request's completions of one task are one ``Scorer.ascore_group`` call.
Cancelling (the deadline, or a client that went away) reaches the scorer's own loop,
where the process executor kills the workers of unfinished checks with everything they
started.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from starlette.types import Receive

from rl_verifier.base.contracts import Score, Status, VerifierRef
from rl_verifier.scoring.engine import Sample
from rl_verifier.scoring.scorer import Scorer

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
    jobs = start_jobs(scorer, samples, problems)
    running = set(jobs.values())
    try:
        late = (await asyncio.wait(running, timeout=deadline_s))[1] if running else set()
    finally:
        for job in running:
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
            [score] = [s for s in job.result() if s.sample_index == position]
            rows.append(score.model_copy(update={"sample_index": sample.index}))
    return rows


def start_jobs(
    scorer: Scorer, samples: Sequence[Sample], problems: Mapping[int, str]
) -> dict[int, asyncio.Future[list[Score]]]:
    """One running job per sample, or per task's samples under a group reward; each job's
    scores carry the request positions of their samples as ``sample_index``."""
    groups: dict[str, list[int]] = {}
    jobs: dict[int, asyncio.Future[list[Score]]] = {}
    for position, sample in enumerate(samples):
        if position in problems:
            continue
        if _grouped(scorer, sample):
            groups.setdefault(sample.task.id, []).append(position)
        else:
            jobs[position] = asyncio.ensure_future(_one(scorer, sample, position))
    for positions in groups.values():
        job = asyncio.ensure_future(_group(scorer, [samples[p] for p in positions], positions))
        jobs.update(dict.fromkeys(positions, job))
    return jobs


def _grouped(scorer: Scorer, sample: Sample) -> bool:
    try:
        return bool(scorer.reward_of(sample.task).groups)
    except Exception:  # noqa: BLE001 - the sample's own job reports it
        return False


async def _one(scorer: Scorer, sample: Sample, position: int) -> list[Score]:
    score = await scorer.ascore(sample.task, sample.completion)
    return [score.model_copy(update={"sample_index": position})]


async def _group(scorer: Scorer, group: list[Sample], positions: list[int]) -> list[Score]:
    scores = await scorer.ascore_group(group[0].task, [s.completion for s in group])
    return [
        s.model_copy(update={"sample_index": p}) for s, p in zip(scores, positions, strict=True)
    ]


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
