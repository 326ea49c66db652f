"""The settings every judge verifier shares: where the judge is and how it is called."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from rl_verifier import Verifier, VerifierConfig

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # rlv serve's default address
DEFAULT_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
CACHE_VARIABLE = "RLV_JUDGE_CACHE"
BASE_URL_VARIABLE = "RLV_JUDGE_BASE_URL"


def default_base_url() -> str:
    """``$RLV_JUDGE_BASE_URL`` if set (a judge server started beside a run), else ``rlv
    serve``'s default address."""
    return os.environ.get(BASE_URL_VARIABLE, "").strip() or DEFAULT_BASE_URL


def default_cache() -> str:
    """``$RLV_JUDGE_CACHE`` if set, else ``judge-calls.sqlite`` in rl-verifier's cache root
    (``$RLV_CACHE_DIR``, default ``~/.cache/rl-verifier``)."""
    chosen = os.environ.get(CACHE_VARIABLE, "").strip()
    if chosen:
        return chosen
    root = os.environ.get("RLV_CACHE_DIR") or str(Path.home() / ".cache" / "rl-verifier")
    return str(Path(root) / "judge-calls.sqlite")


class JudgeSettings(VerifierConfig):
    """An OpenAI-compatible chat endpoint, its sampling settings and the call policy."""

    base_url: str = Field(
        default_factory=default_base_url,
        description="OpenAI-compatible API root (ends in /v1). "
        "Default: $RLV_JUDGE_BASE_URL, else http://127.0.0.1:8000/v1.",
    )
    model: str = Field(default=DEFAULT_MODEL, description="The judge model's name there.")
    api_key_env: str | None = Field(
        default="RLV_JUDGE_API_KEY",
        description="Environment variable holding the API key (the key itself is never "
        "part of the settings); unset variable: no key sent.",
    )
    temperature: float = Field(default=0.0, ge=0, le=2, description="Judge sampling temperature.")
    max_tokens: int = Field(default=256, ge=1, description="Longest judge reply, in tokens.")
    seed: int | None = Field(default=0, description="Sampling seed sent to the endpoint.")
    stream: bool = Field(default=False, description="Read replies as an SSE stream.")
    deadline_s: float = Field(
        default=60.0,
        gt=0,
        allow_inf_nan=False,
        description="Deadline of one judge call, from when it gets a slot: every attempt, "
        "back-off and Retry-After wait counts against it.",
    )
    retries: int = Field(default=3, ge=0, description="Retries of a 429/5xx or lost connection.")
    backoff_s: float = Field(
        default=0.5, ge=0, allow_inf_nan=False, description="First retry's wait; doubles after."
    )
    max_retry_after_s: float = Field(
        default=60.0,
        ge=0,
        allow_inf_nan=False,
        description="Longest Retry-After honoured; longer ones fail the call.",
    )
    max_reply_bytes: int = Field(
        default=4 << 20,
        ge=1024,
        description="Most bytes read of one reply (its body, or its whole stream); a longer "
        "one is an error, read no further.",
    )
    max_event_bytes: int = Field(
        default=256 << 10,
        ge=1024,
        description="stream=true: most bytes of one line of the stream (one event); a longer "
        "one is an error, read no further.",
    )
    judge_concurrency: int = Field(
        default=8, ge=1, description="Judge calls in flight at once, per process."
    )
    cache: str = Field(
        default_factory=default_cache,
        description="Judge-call cache: a SQLite file, 'memory' (this process only) or 'off'. "
        "Default: $RLV_JUDGE_CACHE, else $RLV_CACHE_DIR/judge-calls.sqlite.",
    )
    cache_entries: int = Field(default=200_000, ge=1, description="Most calls kept on disk.")
    max_completion_chars: int = Field(
        default=6000,
        ge=100,
        description="Characters of a completion shown to the judge; "
        "longer ones keep their head and tail, and the cut is recorded.",
    )
    scale: tuple[float, float] = Field(default=(0, 10), description="Lowest and highest score.")
    format: Literal["score_line", "json", "logprobs"] = Field(
        default="score_line",
        description="Judge answer format: a final 'Score: N' line, one JSON object, or "
        "'logprobs': one score digit, read as the probability-weighted mean of the score "
        "digits at the reply's first token (needs an endpoint that returns top_logprobs, "
        "and a scale of single digits, e.g. [1, 5]).",
    )
    min_score_mass: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="format='logprobs': least probability the score digits must hold at "
        "the first token; less is an error, never a score.",
    )
    top_logprobs: int = Field(
        default=20, ge=1, le=20, description="format='logprobs': alternatives asked per token."
    )

    @model_validator(mode="after")
    def _scale_ordered(self) -> JudgeSettings:
        low, high = self.scale
        if not low < high:
            raise ValueError(f"scale must be (low, high) with low < high, got {self.scale}")
        if self.format == "logprobs" and not (
            low >= 0 and high <= 9 and float(low).is_integer() and float(high).is_integer()
        ):
            raise ValueError(
                f"format='logprobs' reads one digit per score: the scale must be whole "
                f"numbers from 0 to 9 (e.g. [1, 5]), got {self.scale}"
            )
        return self


# How a judge is called, not what it concludes: kept out of config_hash.
JUDGE_EXECUTION_KEYS = Verifier.execution_keys | {
    "api_key_env",
    "stream",
    "deadline_s",
    "retries",
    "backoff_s",
    "max_retry_after_s",
    "max_reply_bytes",
    "max_event_bytes",
    "judge_concurrency",
    "cache",
    "cache_entries",
}
