"""The async scoring engine: many samples at once, each verifier under its own limit;
``score_batch`` scores a whole batch and its batch metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rl_verifier.base.contracts import (
    Sample as Sample,  # its home is contracts; callers import it here
)
from rl_verifier.base.contracts import Score, Status, Task, Verdict
from rl_verifier.base.reward import Reward
from rl_verifier.base.validity import range_problem, reusable_problem
from rl_verifier.base.verifier import GroupOnly, Verifier
from rl_verifier.execution.executors import Executor, InlineExecutor, ProcessExecutor
from rl_verifier.scoring.verdict_cache import (
    Cached,
    VerdictCache,
    default_cache,
    task_digest,
    verdict_key,
)

TASK_DIGESTS = 4096  # tasks whose digest the engine keeps (each holds its task alive)



def settle(verifier: Verifier, verdict: Verdict) -> Verdict:
    """Apply the invalid penalty and refuse rewards outside the declared range."""
    if verdict.status is Status.INVALID:
        return verdict.model_copy(update={"reward": verifier.config.invalid_penalty})
    if verdict.status is not Status.OK:
        return verdict.model_copy(update={"reward": 0.0})
    problem = range_problem(verifier, verdict.reward)
    if problem is not None:
        return Verdict.errored(f"verifier '{verifier.name}' returned {problem}", **verdict.info)
    return verdict


@dataclass
class BatchRecord:
    """Per-verifier scores kept for batch metrics."""

    scores: dict[str, list[Score]] = field(default_factory=dict)


class ScoringEngine:
    """Scores samples through an executor, honouring each verifier's concurrency."""

    def __init__(
        self,
        executor: Executor,
        max_in_flight: int | None = None,
        keep_scores: bool = True,
        cache: VerdictCache | bool = True,
    ) -> None:
        """``keep_scores=False`` for long-lived engines (the training loop) that never ask
        for batch metrics: nothing accumulates across batches. ``cache``: the verdict
        cache for deterministic verifiers (``True``: ``default_cache()``; ``False``: none)."""
        self.executor = executor
        self.keep_scores = keep_scores
        self.max_in_flight = max_in_flight or max(4 * executor.capacity, 16)
        self._limits: dict[int, asyncio.Semaphore] = {}
        self.record = BatchRecord()
        self.cache: VerdictCache | None = (
            default_cache() if cache is True else cache if isinstance(cache, VerdictCache) else None
        )
        self._judging: dict[str, asyncio.Future[Cached | None]] = {}
        self._task_digests: OrderedDict[int, tuple[Task, str | None]] = OrderedDict()

    def _task_digest(self, task: Task) -> str | None:
        """The task's digest, computed once per task object (a group shares one)."""
        known = self._task_digests.get(id(task))
        if known is not None and known[0] is task:
            self._task_digests.move_to_end(id(task))
            return known[1]
        digest = task_digest(task)
        self._task_digests[id(task)] = (task, digest)
        while len(self._task_digests) > TASK_DIGESTS:
            self._task_digests.popitem(last=False)
        return digest

    def _limit(self, verifier: Verifier) -> asyncio.Semaphore | None:
        if verifier.concurrency is None:
            return None
        if id(verifier) not in self._limits:
            self._limits[id(verifier)] = asyncio.Semaphore(verifier.concurrency)
        return self._limits[id(verifier)]

    async def _run(self, verifier: Verifier, sample: Sample) -> Cached:
        start = time.perf_counter()
        limit = self._limit(verifier)
        if limit is None:
            verdict = await self.executor.run(verifier, sample.task, sample.completion)
        else:
            async with limit:
                verdict = await self.executor.run(verifier, sample.task, sample.completion)
        return Cached(verdict, time.perf_counter() - start)

    async def _judge(self, verifier: Verifier, version: str, sample: Sample) -> tuple[Cached, bool]:
        """The verdict (penalties applied), the time it took, and whether it was reused:
        from the cache, or from a running check of the same sample, when the verifier is
        cacheable."""
        cache = self.cache
        key = None
        if cache is not None and verifier.cacheable:
            digest = self._task_digest(sample.task)
            if digest is not None:
                key = verdict_key(
                    verifier.name, version, verifier.config_hash, digest, sample.completion
                )
        if cache is None or key is None:
            once = await self._run(verifier, sample)
            return Cached(settle(verifier, once.verdict), once.elapsed_s), False
        found = cache.get(key, verifier)
        running = self._judging.get(key) if found is None else None
        if running is not None:
            shared = await asyncio.shield(running)  # None: that check did not judge
            found = shared if shared is not None and shared.verdict.status.judged else None
        if found is not None:
            info = {**found.verdict.info, "cached": True}
            verdict = found.verdict.model_copy(update={"info": info})
            return Cached(settle(verifier, verdict), found.elapsed_s), True
        future: asyncio.Future[Cached | None] = asyncio.get_running_loop().create_future()
        self._judging.setdefault(key, future)
        judged: Cached | None = None
        try:
            judged = await self._run(verifier, sample)
        finally:
            if self._judging.get(key) is future:
                del self._judging[key]
            future.set_result(judged)
        assert judged is not None  # _run raised otherwise
        if reusable_problem(verifier, judged.verdict) is None:
            cache.put(key, verifier.name, judged.verdict, judged.elapsed_s)
        return Cached(settle(verifier, judged.verdict), judged.elapsed_s), False

    async def _judge_group(self, verifier: Verifier, samples: Sequence[Sample]) -> list[Cached]:
        """One group verifier's verdicts (penalties applied) for a task's samples; each
        carries the group's time. Never cached here: a group verifier caches its own calls."""
        start = time.perf_counter()
        if len(samples) < verifier.min_group_size:
            problem = GroupOnly(verifier.name, len(samples), verifier.min_group_size)
            return [Cached(Verdict.errored(str(problem)), 0.0)] * len(samples)
        task = samples[0].task
        async with contextlib.AsyncExitStack() as stack:
            limit = self._limit(verifier)
            if limit is not None:
                await stack.enter_async_context(limit)
            verdicts = await self.executor.run_group(
                verifier, task, [s.completion for s in samples]
            )
        elapsed = time.perf_counter() - start
        return [Cached(settle(verifier, v), elapsed) for v in verdicts]

    async def score_group(
        self, reward: Reward, samples: Sequence[Sample], emit: int = 0
    ) -> list[Score]:
        """Score a task's samples together: each group verifier of ``reward`` judges them
        all at once, every other verifier each sample alone. ``emit``: how many leading
        samples only join the group (scored before, in a resumed run) and get no score."""
        names = reward.names

        async def part(name: str) -> list[Cached]:
            verifier = reward.verifiers[name]
            if verifier.group:
                return await self._judge_group(verifier, samples)
            version = reward.versions[name]
            judged = await asyncio.gather(
                *(self._judge(verifier, version, s) for s in samples[emit:])
            )
            return [Cached(Verdict(), 0.0)] * emit + [j for j, _ in judged]

        parts = await asyncio.gather(*(part(n) for n in names))
        scores = []
        for position in range(emit, len(samples)):
            sample = samples[position]
            judged = [p[position] for p in parts]
            elapsed = max(j.elapsed_s for j in judged)
            by_name = {n: j.verdict for n, j in zip(names, judged, strict=True)}
            for name, verdict in by_name.items() if self.keep_scores else ():
                self.record.scores.setdefault(name, []).append(
                    make_score(sample, verdict, reward.ref, elapsed)
                )
            scores.append(make_score(sample, reward.combine(by_name), reward.ref, elapsed))
        return scores

    async def score_one(self, reward: Reward, sample: Sample) -> Score:
        """Score one sample alone (a group verifier in ``reward`` gives ``error``: it
        needs the task's other completions; use ``score_group``)."""
        if reward.groups:
            [score] = await self.score_group(reward, [sample])
            return score
        names = reward.names
        if len(names) == 1:  # no gather: one task less per sample
            [name] = names
            judged = [await self._judge(reward.verifiers[name], reward.versions[name], sample)]
        else:
            judged = await asyncio.gather(
                *(self._judge(reward.verifiers[n], reward.versions[n], sample) for n in names)
            )
        # The verifiers run side by side; a reused verdict keeps the time it first took.
        elapsed = max(j.elapsed_s for j, _ in judged)
        verdicts = [j.verdict for j, _ in judged]
        by_name = dict(zip(names, verdicts, strict=True))
        for name, verdict in by_name.items() if self.keep_scores else ():
            self.record.scores.setdefault(name, []).append(
                make_score(sample, verdict, reward.ref, elapsed)
            )
        return make_score(sample, reward.combine(by_name), reward.ref, elapsed)

    async def score(
        self,
        samples: Iterable[tuple[Reward, Sample]],
        on_score: Callable[[Score], None] | None = None,
        context: Iterable[tuple[Reward, Sample]] = (),
    ) -> list[Score]:
        """Score every sample; results come back in input order, ``on_score`` sees
        each as it finishes. Samples of one task under a reward with a group verifier are
        scored as one group; ``context`` holds such samples scored earlier (a resumed
        run): they join their task's group but get no score again."""
        units = group_units(list(samples), context)
        results: list[Score | None] = [None] * sum(len(u.positions) for u in units)
        cursor = iter(units)

        async def lane() -> None:
            for unit in cursor:
                if unit.reward.groups:
                    scores = await self.score_group(unit.reward, unit.samples, unit.emit)
                else:
                    scores = [await self.score_one(unit.reward, unit.samples[0])]
                for position, score in zip(unit.positions, scores, strict=True):
                    results[position] = score
                    if on_score is not None:
                        on_score(score)

        lanes = min(self.max_in_flight, len(units)) or 1
        await asyncio.gather(*(lane() for _ in range(lanes)))
        return [s for s in results if s is not None]

    def remember(self, reward: Reward, score: Score) -> None:
        """Count a score finished earlier (a resumed batch) in the batch metrics."""
        if not self.keep_scores:
            return
        for name, part in reward.split(score).items():
            self.record.scores.setdefault(name, []).append(part)

    def batch_metrics(self, rewards: Sequence[Reward]) -> dict[str, float]:
        """Each verifier's batch figures; prefixed by verifier name when several ran."""
        verifiers = {name: r.verifiers[name] for r in rewards for name in r.names}
        metrics: dict[str, float] = {}
        for name, verifier in verifiers.items():
            figures = verifier.batch_metrics(self.record.scores.get(name, []))
            prefix = "" if len(verifiers) == 1 else f"{name}."
            metrics.update({prefix + key: value for key, value in figures.items()})
        return metrics


@dataclass
class Unit:
    """What one lane scores at once: one sample, or a task's group under a group reward
    (``emit`` leading samples of which are context only); ``positions`` in the input."""

    reward: Reward
    samples: list[Sample]
    positions: list[int]
    emit: int = 0


def group_units(
    jobs: Sequence[tuple[Reward, Sample]], context: Iterable[tuple[Reward, Sample]] = ()
) -> list[Unit]:
    """Jobs in units, in order of first appearance: a sample alone, or, under a reward with
    a group verifier, every sample of its task (by reward and task id)."""
    units: list[Unit] = []
    groups: dict[tuple[int, str], Unit] = {}
    for reward, sample in context:
        if reward.groups:
            earlier = groups.setdefault((id(reward), sample.task.id), Unit(reward, [], []))
            earlier.samples.append(sample)
            earlier.emit += 1
    for position, (reward, sample) in enumerate(jobs):
        if not reward.groups:
            units.append(Unit(reward, [sample], [position]))
            continue
        key = (id(reward), sample.task.id)
        unit = groups.setdefault(key, Unit(reward, [], []))
        if not unit.positions:
            units.append(unit)
        unit.samples.append(sample)
        unit.positions.append(position)
    return units


def make_score(sample: Sample, verdict: Verdict, ref: object, elapsed: float) -> Score:
    return Score.model_validate(
        {
            "task_id": sample.task.id,
            "sample_index": sample.index,
            "reward": verdict.reward,
            "status": verdict.status,
            "components": verdict.components,
            "verifier": ref,
            "elapsed_s": elapsed,
            "info": verdict.info,
            "error": verdict.error,
        }
    )


ExecutorKind = Literal["process", "inline", "ray"]


def make_executor(
    kind: ExecutorKind = "process", workers: int | None = None, address: str | None = None
) -> Executor:
    """``address`` (ray only) joins a Ray cluster; without it Ray starts locally."""
    if kind == "inline":
        return InlineExecutor(workers)
    if kind == "ray":
        from rl_verifier.execution.ray_executor import RayExecutor

        return RayExecutor(address=address, workers=workers)
    return ProcessExecutor(workers)


@dataclass
class BatchResult:
    scores: list[Score]
    metrics: dict[str, float]


async def score_batch(
    jobs: Sequence[tuple[Reward, Sample]],
    executor: Executor,
    on_score: Callable[[Score], None] | None = None,
    finished: Sequence[tuple[Reward, Score]] = (),
    cache: VerdictCache | bool = True,
    context: Sequence[tuple[Reward, Sample]] = (),
) -> BatchResult:
    """Score ``jobs`` (input order kept) and compute each verifier's batch metrics.

    ``finished`` holds scores of the same batch from an earlier, interrupted run: they
    are not scored again but count in the batch metrics and come first in ``scores``.
    ``cache`` as for ``ScoringEngine``; ``context``: the samples of ``finished``, which
    join their task's group for group verifiers (see ``ScoringEngine.score``).
    """
    async with executor:
        engine = ScoringEngine(executor, cache=cache)
        for reward, score in finished:
            engine.remember(reward, score)
        scores = [score for _, score in finished] + await engine.score(jobs, on_score, context)
    rewards = list({id(reward): reward for reward, _ in jobs}.values())
    return BatchResult(scores, engine.batch_metrics(rewards))
