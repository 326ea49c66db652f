"""Rollouts: sample each step's groups from the newest allowed weights and score them.

Sampling and scoring run in a producer task; training consumes its batches. With
``sampling_ahead = 0`` the producer samples step ``s`` only from the weights after step
``s - 1`` (strictly on-policy); with ``k > 0`` it may use weights up to ``k`` steps old,
so sampling and scoring of the next step overlap training of this one.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

from rl_verifier.base.contracts import Completion, Score, Task
from rl_verifier.scoring.engine import Sample, ScoringEngine
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.environments import Episode, Turn, run_group
from rl_verifier.train.preflight import Plan
from rl_verifier.train.renderer import Renderer

# Deprecated: the run's ``TrainConfig.max_context``; this is its default.
MAX_CONTEXT: int = TrainConfig.model_fields["max_context"].default


@dataclass
class Rollout:
    task: Task
    episode: Episode
    score: Score


@dataclass
class Batch:
    step: int
    groups: list[list[Rollout]]
    sampler_version: int
    sampling_s: float
    scoring_s: float  # scoring wall time left after sampling ended (not hidden behind it)
    scoring_busy_s: float  # scoring time summed over groups

    @property
    def rollouts(self) -> list[Rollout]:
        return [rollout for group in self.groups for rollout in group]


@dataclass
class SamplerBoard:
    """The newest sampling client and how many training steps its weights have seen."""

    version: int = -1
    client: Any = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def publish(self, version: int, client: Any) -> None:
        async with self.changed:
            self.version, self.client = version, client
            self.changed.notify_all()

    async def at_least(self, version: int) -> tuple[int, Any]:
        async with self.changed:
            await self.changed.wait_for(lambda: self.version >= version)
            return self.version, self.client


def group_seed(seed: int, step: int, index: int) -> int:
    """The sampling seed of group ``index`` of ``step``: the same in every run of ``seed``."""
    return (seed * 1_000_003 + step * 1009 + index) % (2**31)


def tasks_for_step(tasks: list[Task], step: int, per_step: int, seed: int) -> list[Task]:
    """Deterministic in ``step``: a resumed run continues the same data order."""
    chosen = []
    for slot in range(step * per_step, (step + 1) * per_step):
        epoch, position = divmod(slot, len(tasks))
        order = list(range(len(tasks)))
        random.Random(f"{seed}:{epoch}").shuffle(order)
        chosen.append(tasks[order[position]])
    return chosen


class RolloutProducer:
    """Fills the batch queue: one batch of scored groups per step."""

    def __init__(
        self, config: TrainConfig, plan: Plan, renderer: Renderer, board: SamplerBoard
    ) -> None:
        self.config = config
        self.plan = plan
        self.renderer = renderer
        self.board = board

    def sampling_params(self, seed: int) -> Any:
        from tinker import types

        return types.SamplingParams(
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            stop=self.renderer.stop(),
            seed=seed,
        )

    async def episodes(self, sampler: Any, task: Task, seed: int) -> list[Episode]:
        from tinker import types

        async def sample(prompt: list[int], count: int, stream: int) -> list[Turn]:
            result = await sampler.sample(
                prompt=types.ModelInput.from_ints(prompt),
                num_samples=count,
                sampling_params=self.sampling_params(seed if stream == 0 else seed * 1000 + stream),
            )
            turns = []
            for seq in result.sequences:
                tokens = list(seq.tokens)
                turns.append(
                    Turn(tokens, list(seq.logprobs or []), self.renderer.response_text(tokens))
                )
            return turns

        config = self.config
        return await run_group(
            self.plan.env, task, self.renderer, sample, config.group_size, config.max_context
        )

    async def score_group(
        self, engine: ScoringEngine, task: Task, episodes: list[Episode]
    ) -> list[Rollout]:
        reward = self.plan.rewards(task)
        samples = [
            Sample(task, Completion(task_id=task.id, completion=episode.reply), index)
            for index, episode in enumerate(episodes)
        ]
        if reward.groups:  # a group verifier judges the sampled group at once
            scores = await engine.score_group(reward, samples)
        else:
            scores = await asyncio.gather(*(engine.score_one(reward, s) for s in samples))
        return [Rollout(task, e, s) for e, s in zip(episodes, scores, strict=True)]

    async def group(
        self, engine: ScoringEngine, sampler: Any, step: int, index: int, task: Task
    ) -> tuple[list[Rollout], float, float]:
        """One group: its rollouts, when its sampling ended and how long scoring took."""
        seed = group_seed(self.config.seed, step, index)
        episodes = await self.episodes(sampler, task, seed)
        sampled_at = time.perf_counter()
        rollouts = await self.score_group(engine, task, episodes)
        return rollouts, sampled_at, time.perf_counter() - sampled_at

    async def produce(self, engine: ScoringEngine, start: int, queue: asyncio.Queue[Batch]) -> None:
        config = self.config
        for step in range(start, config.steps):
            version, sampler = await self.board.at_least(step - config.sampling_ahead)
            begin = time.perf_counter()
            chosen = tasks_for_step(self.plan.tasks, step, config.groups_per_step, config.seed)
            results = await asyncio.gather(
                *(self.group(engine, sampler, step, g, task) for g, task in enumerate(chosen))
            )
            end = time.perf_counter()
            sampling_s = max(sampled_at for _, sampled_at, _ in results) - begin
            batch = Batch(
                step=step,
                groups=[rollouts for rollouts, _, _ in results],
                sampler_version=version,
                sampling_s=sampling_s,
                scoring_s=end - begin - sampling_s,
                scoring_busy_s=sum(busy for _, _, busy in results),
            )
            await queue.put(batch)


async def next_batch(queue: asyncio.Queue[Batch], producer: asyncio.Task[None]) -> Batch:
    """The next batch, or the producer's exception if it failed first."""
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        return getter.result()
    getter.cancel()
    producer.result()  # raises the producer's error
    raise RuntimeError("sampling stopped before the run ended")
