"""The body of an OpenAI ``/v1/chat/completions`` or ``/v1/completions`` request, every
field checked into its range (against the server's limits) before it is tokenised or joins
a batch: a wrong field is a user error naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.runtime.types import SamplingParams

MAX_STOP_STRINGS = 4  # as OpenAI
MAX_TEMPERATURE = 2.0  # as OpenAI
MAX_TOP_LOGPROBS = {"chat": 20, "completion": 5}  # as OpenAI
COMPLETION_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
# Accepted and ignored: they change nothing here (no penalties, bias or tools are offered).
IGNORED_WHEN_DEFAULT = {
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "logit_bias": None,
    "best_of": 1,
    "echo": False,
    "suffix": None,
    "tools": None,
    "response_format": None,
}
PASSIVE = ("user", "metadata", "store", "stream_options", "service_tier", "parallel_tool_calls")


@dataclass(frozen=True)
class GenerateCall:
    """One request: the prompts (token lists, or chat messages to render) and how to
    sample ``n`` choices for each."""

    kind: str  # "chat" or "completion"
    model: str
    prompts: list[list[int]] | None  # completion prompts given as tokens
    texts: list[str] | None  # completion prompts given as text
    messages: list[dict[str, Any]] | None  # chat
    n: int
    max_tokens: int | None  # None: up to the context (chat only), within --max-tokens
    params: SamplingParams  # temperature (a tiny one is greedy), top_p
    stop: list[str]
    seed: int | None
    logprobs: bool
    top_logprobs: int
    stream: bool
    include_usage: bool

    @property
    def prompt_count(self) -> int:
        if self.messages is not None:
            return 1
        return len(self.prompts if self.prompts is not None else self.texts or [])

    @classmethod
    def parse(cls, kind: str, body: dict[str, Any], limits: ServerLimits) -> GenerateCall:
        model = fields.text(body, "model")
        for key, default in IGNORED_WHEN_DEFAULT.items():
            if not _neutral(body.get(key), default):
                raise UserError(f"'{key}' is not supported by rlv serve")
        known = {
            "model", "messages", "prompt", "n", "max_tokens", "max_completion_tokens",
            "temperature", "top_p", "stop", "seed", "logprobs", "top_logprobs", "stream",
            *IGNORED_WHEN_DEFAULT, *PASSIVE,
        }  # fmt: skip
        unknown = sorted(set(body) - known)
        if unknown:
            raise UserError(f"'{unknown[0]}' is not supported by rlv serve")
        n = fields.integer(body, "n", 1)
        messages = texts = prompts = None
        if kind == "chat":
            messages = chat_messages(body.get("messages"))
            logprobs = fields.flag(body, "logprobs", False)
            top = fields.integer(body, "top_logprobs", 0)
            if top and not logprobs:
                raise UserError("'top_logprobs' needs 'logprobs': true")
            limit = fields.integer(body, "max_completion_tokens", None)
            max_tokens = fields.integer(body, "max_tokens", limit)
        else:
            texts, prompts = completion_prompts(body.get("prompt"))
            top = fields.integer(body, "logprobs", None)
            logprobs = top is not None
            top = top or 0
            max_tokens = fields.integer(body, "max_tokens", COMPLETION_DEFAULT_MAX_TOKENS)
        if max_tokens is not None and not 1 <= max_tokens <= limits.max_tokens:
            key = "max_tokens" if body.get("max_tokens") is not None else "max_completion_tokens"
            raise UserError(
                f"'{key}' must be between 1 and {limits.max_tokens}, this server's "
                f"limit (rlv serve --max-tokens), got {max_tokens}"
            )
        if not 0 <= top <= MAX_TOP_LOGPROBS[kind]:
            name = "top_logprobs" if kind == "chat" else "logprobs"
            raise UserError(f"'{name}' must be between 0 and {MAX_TOP_LOGPROBS[kind]}, got {top}")
        options = fields.mapping(body, "stream_options")
        call = cls(
            kind=kind,
            model=model,
            prompts=prompts,
            texts=texts,
            messages=messages,
            n=n,
            max_tokens=max_tokens,
            params=SamplingParams.checked(
                fields.number(body, "temperature", 1.0),
                fields.number(body, "top_p", 1.0),
                max_temperature=MAX_TEMPERATURE,
            ),
            stop=stop_strings(body.get("stop")),
            seed=fields.integer(body, "seed", None),
            logprobs=logprobs,
            top_logprobs=top,
            stream=fields.flag(body, "stream", False),
            include_usage=fields.flag(options, "include_usage", False),
        )
        call.check(limits)
        return call

    def check(self, limits: ServerLimits) -> None:
        if not 1 <= self.n * self.prompt_count <= limits.max_num_samples:
            raise UserError(
                f"'n' ({self.n}) times the number of prompts ({self.prompt_count}) must be "
                f"between 1 and {limits.max_num_samples}, this server's limit "
                "(rlv serve --max-num-samples)"
            )
        if self.prompt_chars > limits.max_prompt_chars:
            raise prompt_too_long(self.prompt_chars, limits)

    @property
    def prompt_chars(self) -> int:
        """Characters of prompt text (chat: every role and content), before any template."""
        if self.messages is not None:
            return sum(len(m["role"]) + len(m["content"]) for m in self.messages)
        return sum(len(text) for text in self.texts or [])


def chat_messages(value: object) -> list[dict[str, Any]]:
    """``messages``: a non-empty list of ``{role, content}``; content is a string or a list
    of text parts (joined)."""
    if not isinstance(value, list) or not value:
        raise UserError("'messages' must be a non-empty list of {role, content} objects")
    messages = []
    for i, message in enumerate(value):
        where = f"'messages[{i}]'"
        if not isinstance(message, dict):
            raise UserError(f"{where} must be an object with 'role' and 'content'")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not role:
            raise UserError(f"{where} needs a 'role' string")
        if isinstance(content, list):
            parts = []
            for part in content:
                if not (isinstance(part, dict) and part.get("type") == "text"):
                    raise UserError(f"{where}.content: only text parts are supported")
                if not isinstance(part.get("text"), str):
                    raise UserError(f"{where}.content: a text part needs a 'text' string")
                parts.append(part["text"])
            content = "".join(parts)
        if not isinstance(content, str):
            raise UserError(f"{where} needs a 'content' string (or a list of text parts)")
        messages.append({"role": role, "content": content})
    return messages


def completion_prompts(value: object) -> tuple[list[str] | None, list[list[int]] | None]:
    """``prompt``: a string, a list of strings, a list of token ids or a list of those."""
    if isinstance(value, str):
        return [value], None
    if isinstance(value, list) and value:
        if all(isinstance(p, str) for p in value):
            return [str(p) for p in value], None
        if all(_is_id(t) for t in value):
            return None, [[int(t) for t in value]]
        if all(isinstance(p, list) and p and all(_is_id(t) for t in p) for p in value):
            return None, [[int(t) for t in p] for p in value]
    raise UserError(
        "'prompt' must be a string, a list of strings, a list of token ids or a list of "
        "token id lists (none empty)"
    )


def prompt_too_long(chars: int, limits: ServerLimits) -> UserError:
    return UserError(
        f"the prompt has {chars} characters, more than this server's limit of "
        f"{limits.max_prompt_chars} (rlv serve --max-prompt-chars)"
    )


def stop_strings(value: object) -> list[str]:
    """``stop``: null, a string or a list of at most 4 strings (``fields.stop_condition``)."""
    stop = fields.stop_condition(value, MAX_STOP_STRINGS)
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if not all(isinstance(s, str) for s in stop):
        raise UserError("'stop' must be a string or a list of strings")
    return [str(s) for s in stop]


def _neutral(value: object, default: object) -> bool:
    """``value`` is absent, or the field's neutral value (of its type: ``true`` is no 1)."""
    if value is None or default is None:
        return value is None
    if isinstance(default, bool) or isinstance(value, bool):
        return value is default
    return isinstance(value, int | float) and value == default


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
