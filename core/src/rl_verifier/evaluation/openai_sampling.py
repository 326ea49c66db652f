"""Samples from any OpenAI-compatible ``/v1/chat/completions`` endpoint, through the official
``openai`` client: chat messages in, text out, one request per turn, seeded as the Tinker
path is (the endpoint decides whether it honours the seed)."""

from __future__ import annotations

import os
import time
from typing import Any

from rl_verifier.base.contracts import Task
from rl_verifier.base.errors import UserError
from rl_verifier.evaluation.sampling import Sampled, SamplingSettings, sample_seed
from rl_verifier.train.environments import TOOL_RECORD_KEY, Environment


def openai_client(base_url: str) -> Any:
    try:
        import openai
    except ImportError:
        raise UserError("--openai-base-url needs the openai package: pip install openai") from None
    key = os.environ.get("OPENAI_API_KEY") or "none"
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=2)


class OpenAISampler:
    """Episodes of ``env`` on ``model`` behind an OpenAI-compatible API."""

    def __init__(
        self, client: Any, model: str, env: Environment, settings: SamplingSettings
    ) -> None:
        self.client = client
        self.model = model
        self.env = env
        self.settings = settings

    async def reply(self, messages: list[dict[str, Any]], seed: int) -> tuple[str, int]:
        """The assistant's text and its completion tokens (0 when the API reports none)."""
        response = await self.client.chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            top_p=self.settings.top_p,
            seed=seed,
            n=1,
        )
        text = response.choices[0].message.content or ""
        return text, response.usage.completion_tokens if response.usage else 0

    async def sample(self, task: Task, index: int) -> Sampled:
        begin = time.perf_counter()
        messages = [dict(m) for m in self.env.start(task)]
        opened, tokens, turns, end = len(messages), 0, 0, "max_turns"
        while turns < self.env.max_turns:
            turns += 1
            seed = sample_seed(self.settings.seed, task.id, index, turns)
            text, used = await self.reply(messages, seed)
            tokens += used
            messages.append({"role": "assistant", "content": text})
            if turns >= self.env.max_turns:
                break
            more = self.env.respond(task, messages, text)
            if more is None:
                end = "done"
                break
            messages += [{k: v for k, v in m.items() if k != TOOL_RECORD_KEY} for m in more]
        first = sample_seed(self.settings.seed, task.id, index, 1)
        return Sampled(messages[opened:], tokens, turns, end, first, time.perf_counter() - begin)
