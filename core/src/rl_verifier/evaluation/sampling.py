"""Seeded samples through the Tinker SDK: one request per sample, its seed a function of
(seed, task id, sample index, turn), so a resumed or repeated eval draws the same samples."""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from rl_verifier.base.contracts import Task
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.environments import Environment, Episode, Turn, run_episode
from rl_verifier.train.renderer import Renderer


@dataclass(frozen=True)
class SamplingSettings:
    """What a sample depends on besides the model and the task; recorded with the eval."""

    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    max_context: int = TrainConfig.model_fields["max_context"].default

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sample_seed(seed: int, task_id: str, index: int, turn: int = 0) -> int:
    """A 31-bit seed that depends only on its arguments (not on order or batching)."""
    digest = hashlib.sha256(f"{seed}\0{task_id}\0{index}\0{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


@dataclass
class Sampled:
    """One sample: the reply messages (what the verifier judges), how it was drawn, and how
    long that took."""

    reply: list[dict[str, Any]]
    tokens: int
    turns: int
    end_reason: str
    seed: int
    sampling_s: float

    @classmethod
    def of(cls, episode: Episode, seed: int, sampling_s: float) -> Sampled:
        tokens = sum(len(s.tokens) for s in episode.segments if s.sampled)
        return cls(episode.reply, tokens, episode.turns, episode.end_reason, seed, sampling_s)


class SamplesTasks(Protocol):
    """What the runner samples from: ``rlv serve``/Tinker, or an OpenAI-compatible API."""

    async def sample(self, task: Task, index: int) -> Sampled: ...


class Sampler:
    """Samples episodes of ``env`` from a Tinker sampling client."""

    def __init__(
        self, client: Any, renderer: Renderer, env: Environment, settings: SamplingSettings
    ) -> None:
        self.client = client
        self.renderer = renderer
        self.env = env
        self.settings = settings

    async def turn(self, tokens: list[int], seed: int) -> Turn:
        from tinker import types

        params = types.SamplingParams(
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            top_p=self.settings.top_p,
            stop=self.renderer.stop(),
            seed=seed,
        )
        result = await self.client.sample(
            prompt=types.ModelInput.from_ints(tokens), num_samples=1, sampling_params=params
        )
        [sequence] = result.sequences
        sampled = list(sequence.tokens)
        return Turn(sampled, list(sequence.logprobs or []), self.renderer.response_text(sampled))

    async def sample(self, task: Task, index: int) -> Sampled:
        """Sample ``index`` of ``task``: the same seed gives the same episode."""
        begin = time.perf_counter()
        turns = 0

        async def next_turn(tokens: list[int]) -> Turn:
            nonlocal turns
            turns += 1
            return await self.turn(tokens, sample_seed(self.settings.seed, task.id, index, turns))

        episode = await run_episode(
            self.env, task, self.renderer, next_turn, self.settings.max_context
        )
        seed = sample_seed(self.settings.seed, task.id, index, 1)
        return Sampled.of(episode, seed, time.perf_counter() - begin)
