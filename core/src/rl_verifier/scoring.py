"""Score a batch end to end: pick an executor, run the engine, collect batch metrics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rl_verifier.contracts import Score
from rl_verifier.engine import Sample, ScoringEngine
from rl_verifier.executors import Executor, InlineExecutor, ProcessExecutor
from rl_verifier.reward import Reward

ExecutorKind = Literal["process", "inline", "ray"]


def make_executor(
    kind: ExecutorKind = "process", workers: int | None = None, address: str | None = None
) -> Executor:
    """``address`` (ray only) joins a Ray cluster; without it Ray starts locally."""
    if kind == "inline":
        return InlineExecutor(workers)
    if kind == "ray":
        from rl_verifier.ray_executor import RayExecutor

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
) -> BatchResult:
    """Score ``jobs`` (input order kept) and compute each verifier's batch metrics.

    ``finished`` holds scores of the same batch from an earlier, interrupted run: they
    are not scored again but count in the batch metrics and come first in ``scores``.
    """
    async with executor:
        engine = ScoringEngine(executor)
        for reward, score in finished:
            engine.remember(reward, score)
        scores = [score for _, score in finished] + await engine.score(jobs, on_score)
    rewards = list({id(reward): reward for reward, _ in jobs}.values())
    return BatchResult(scores, engine.batch_metrics(rewards))
