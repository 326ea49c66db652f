"""The body of an OpenAI ``/v1/chat/completions`` or ``/v1/completions`` request, checked
against the server's limits: a wrong field is a user error naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rl_verifier import UserError
from rl_verifier_server import fields
from rl_verifier_server.limits import ServerLimits

MAX_STOP_STRINGS = 4  # as OpenAI
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
    temperature: float
    top_p: float
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
            if body.get(key) not in (None, default):
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
            temperature=fields.number(body, "temperature", 1.0),
            top_p=fields.number(body, "top_p", 1.0),
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
        if self.max_tokens is not None and not 1 <= self.max_tokens <= limits.max_tokens:
            raise UserError(
                f"'max_tokens' must be between 1 and {limits.max_tokens}, this server's "
                f"limit (rlv serve --max-tokens), got {self.max_tokens}"
            )
        if not 0 <= self.temperature <= 2:
            raise UserError(f"'temperature' must be between 0 and 2, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"'top_p' must be greater than 0 and at most 1, got {self.top_p}")


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


def stop_strings(value: object) -> list[str]:
    """``stop``: null, a string or a list of at most 4 non-empty strings."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if (
        not isinstance(items, list)
        or len(items) > MAX_STOP_STRINGS
        or not all(isinstance(s, str) and s for s in items)
    ):
        raise UserError(
            f"'stop' must be a non-empty string or a list of at most {MAX_STOP_STRINGS} of them"
        )
    return [str(s) for s in items]


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
