"""Sample, score and log every (task, sample index) an eval still lacks.

Each sample is scored as soon as it is sampled and its row is appended (fsynced) at once,
so a run killed at any point keeps every finished sample, and a resumed one samples only
the missing indices. Under a reward with a group verifier (``judge_rank``) a task's missing
samples are drawn first and judged together, with the task's earlier completions (from a
resumed run) shown in the group too. ``timeout``/``error`` scores are kept as they are,
never as wrong.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from rl_verifier.base.contracts import Completion, Score, Task
from rl_verifier.evaluation.sampling import Sampled, SamplesTasks
from rl_verifier.scoring.engine import Sample, ScoringEngine
from rl_verifier.scoring.resolve import RewardResolver

MAX_IN_FLIGHT = 16  # samples being drawn or scored at once

Key = tuple[str, int]


@dataclass
class Plan:
    """What to evaluate: the tasks, their rewards and how many samples of each."""

    tasks: list[Task]
    rewards: RewardResolver
    n: int

    @functools.cached_property
    def by_id(self) -> dict[str, Task]:
        return {task.id: task for task in self.tasks}


def missing(plan: Plan, done: Collection[Key]) -> list[tuple[Task, int]]:
    """Every (task, sample index) below ``n`` that has no row yet, in task order."""
    return [(t, i) for t in plan.tasks for i in range(plan.n) if (t.id, i) not in done]


def sample_row(task: Task, index: int, sampled: Sampled, score: Score) -> dict[str, Any]:
    """One line of ``samples.jsonl``: the completion, how it was drawn, and its score."""
    return {
        "task_id": task.id,
        "sample_index": index,
        "seed": sampled.seed,
        "completion": sampled.reply,
        "tokens": sampled.tokens,
        "turns": sampled.turns,
        "end_reason": sampled.end_reason,
        "sampling_s": sampled.sampling_s,
        "score": score.model_dump(mode="json"),
    }


async def score_completion(
    engine: ScoringEngine, plan: Plan, task: Task, index: int, completion: Any
) -> Score:
    return await engine.score_one(plan.rewards(task), sample_of(task, index, completion))


async def run_missing(
    plan: Plan,
    sampler: SamplesTasks,
    engine: ScoringEngine,
    done: Collection[Key],
    write: Callable[[dict[str, Any]], None],
    earlier: Mapping[Key, Any] | None = None,
) -> int:
    """Sample and score what is missing, writing each row as it is finished; the count.
    ``earlier``: the completions of the done samples, for a group verifier's groups."""
    todo = missing(plan, done)
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def one(task: Task, index: int) -> None:
        async with gate:
            sampled = await sampler.sample(task, index)
            score = await score_completion(engine, plan, task, index, sampled.reply)
        write(sample_row(task, index, sampled, score))

    async def draw(task: Task, index: int) -> Sampled:
        async with gate:
            return await sampler.sample(task, index)

    async def group(task: Task, indices: list[int]) -> None:
        drawn = await asyncio.gather(*(draw(task, index) for index in indices))
        before = [(i, c) for (t, i), c in sorted((earlier or {}).items()) if t == task.id]
        samples = [sample_of(task, i, c) for i, c in before]
        samples += [sample_of(task, i, d.reply) for i, d in zip(indices, drawn, strict=True)]
        scores = await engine.score_group(plan.rewards(task), samples, emit=len(before))
        for index, sampled, score in zip(indices, drawn, scores, strict=True):
            write(sample_row(task, index, sampled, score))

    grouped: dict[str, tuple[Task, list[int]]] = {}
    singles = []
    for task, index in todo:
        if plan.rewards(task).groups:
            grouped.setdefault(task.id, (task, []))[1].append(index)
        else:
            singles.append(one(task, index))
    await asyncio.gather(*singles, *(group(task, indices) for task, indices in grouped.values()))
    return len(todo)


def sample_of(task: Task, index: int, completion: Any) -> Sample:
    """The engine's sample of ``task``'s completion number ``index``."""
    return Sample(task, Completion(task_id=task.id, completion=completion), index)
