"""A judge endpoint's reply read into its text, finish reason, token counts and logprobs:
a JSON body, or the lines of an SSE stream. A reply that gives no usable text is a
``JudgeFailure`` with a status and a reason; none is ever a score."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from rl_verifier import Status
from rl_verifier_judge.logprob_scores import Alternatives, first_alternatives

BODY_SHOWN = 500  # characters of a bad reply kept as the row's judge_text


class JudgeFailure(Exception):
    """A judge call that gave no usable reply."""

    def __init__(self, status: Status, reason: str, text: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.text = text


@dataclass
class Usage:
    """Calls and tokens spent, summed over the judge calls behind one verdict."""

    calls: int = 0
    cached_calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        for name in ("calls", "cached_calls", "attempts", "prompt_tokens", "completion_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_info(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Reply:
    """The judge's text, why it stopped, what the call cost and, where logprobs were asked,
    the first token's alternatives."""

    text: str
    finish_reason: str | None
    usage: Usage = field(default_factory=Usage)
    alternatives: Alternatives | None = None

    def stored(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "alternatives": self.alternatives,
        }


def reply_from_body(body: bytes) -> Reply:
    """A ``chat.completion`` JSON body."""
    shown = body[: BODY_SHOWN * 4].decode("utf-8", "replace")[:BODY_SHOWN]
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise JudgeFailure(
            Status.ERROR, "judge endpoint sent a body that is not JSON", shown
        ) from None
    try:
        [choice, *_] = data["choices"]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise JudgeFailure(Status.ERROR, "judge reply has no choices[0].message", shown) from None
    _check_refusal(message.get("refusal"), choice.get("finish_reason"), content)
    if not isinstance(content, str):
        raise JudgeFailure(Status.ERROR, "judge reply has no text content", shown)
    alternatives = first_alternatives(choice.get("logprobs"))
    return Reply(content, choice.get("finish_reason"), _usage(data), alternatives)


async def reply_from_stream(lines: AsyncIterator[str]) -> Reply:
    """The text of an SSE stream of ``chat.completion.chunk`` events; a stream that ends
    before ``[DONE]`` is an error."""
    parts: list[str] = []
    refusal: list[str] = []
    finish: str | None = None
    alternatives: Alternatives | None = None
    usage = Usage()
    done = False
    async for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(payload)
            if chunk.get("usage"):
                usage = _usage(chunk)
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                parts.append(delta.get("content") or "")
                refusal.append(delta.get("refusal") or "")
                finish = choice.get("finish_reason") or finish
                if alternatives is None:
                    alternatives = first_alternatives(choice.get("logprobs"))
        except (ValueError, RecursionError, AttributeError, TypeError):
            raise JudgeFailure(
                Status.ERROR, "judge stream sent an unreadable event", payload[:BODY_SHOWN]
            ) from None
    text = "".join(parts)
    if not done or finish is None:
        raise JudgeFailure(Status.ERROR, "judge stream ended before it finished", text)
    _check_refusal("".join(refusal), finish, text)
    return Reply(text, finish, usage, alternatives)


def _check_refusal(refusal: Any, finish_reason: Any, content: Any) -> None:
    if refusal:
        raise JudgeFailure(Status.ERROR, "the judge refused", str(refusal))
    if finish_reason == "content_filter":
        raise JudgeFailure(Status.ERROR, "the judge's reply was filtered", str(content or ""))


def _usage(data: Any) -> Usage:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return Usage()
    try:
        return Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
    except (TypeError, ValueError, OverflowError):
        return Usage()


__all__ = ["BODY_SHOWN", "JudgeFailure", "Reply", "Usage", "reply_from_body", "reply_from_stream"]
