"""A completion read as a tool-use trajectory: calls, tool responses and the final answer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rl_verifier import ChatMessage, Text, ToolCall, after_reasoning, content_text
from rl_verifier.internal import (
    UNTERMINATED,
    openai_tool_calls,
    strip_tool_calls,
    tagged_tool_calls,
)

RESPONSE_RE = re.compile(r"<tool_response>(.*?)</tool_response>", re.DOTALL)
RESPONSE_TAG = "<tool_response>"
TOOL_ROLES = frozenset({"tool", "function", "ipython"})


@dataclass
class Trajectory:
    """What a completion did.

    ``format_error`` is set when the trajectory cannot be scored as an answer (a
    ``<tool_call>`` left open, no final answer); ``fabricated_output`` when an assistant
    turn wrote a ``<tool_response>`` itself; ``empty`` when there is no output at all.
    """

    calls: list[ToolCall] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    final: str = ""
    format_error: str | None = None
    fabricated_output: bool = False
    empty: bool = False


def read_trajectory(completion: Text) -> Trajectory:
    """Parse a completion: a chat message list after the prompt, or a single string."""
    if isinstance(completion, str):
        return _from_messages([("assistant", completion, None, None)])
    return _from_messages([_unpack(message) for message in completion])


def _unpack(message: ChatMessage) -> tuple[str, str, Any, Any]:
    extra = message.model_extra or {}
    return (
        message.role,
        content_text(message.content),
        extra.get("tool_calls"),
        extra.get("function_call"),
    )


def _from_messages(messages: list[tuple[str, str, Any, Any]]) -> Trajectory:
    result = Trajectory()
    last_role = ""
    last_assistant = ""
    seen_output = False
    for role, text, tool_calls, function_call in messages:
        if role == "assistant":
            last_role = role
            seen_output = seen_output or bool(text.strip())
            if RESPONSE_TAG in text:
                result.fabricated_output = True
            calls, unterminated = tagged_tool_calls(text)
            if unterminated and result.format_error is None:
                result.format_error = UNTERMINATED
            if isinstance(tool_calls, list):
                calls += openai_tool_calls(tool_calls)
            if isinstance(function_call, dict):
                calls += openai_tool_calls([function_call])
            result.calls += calls
            last_assistant = text
        elif role in TOOL_ROLES:
            last_role = role
            result.responses.append(text)
        elif RESPONSE_TAG in text:  # Qwen/Hermes: tool responses inside a user turn
            last_role = "tool"
            result.responses += [m.group(1).strip() for m in RESPONSE_RE.finditer(text)]
    result.final = final_answer(last_assistant)
    if not seen_output and not result.calls:
        result.empty = True
    elif result.format_error is None:
        if last_role != "assistant":
            result.format_error = "no final answer after the last tool response"
        elif not result.final:
            result.format_error = "no final answer: the last assistant turn has only tool calls"
    return result


def final_answer(text: str) -> str:
    """The answer part of an assistant turn: no reasoning, no tool-call blocks."""
    text = after_reasoning(text)
    return strip_tool_calls(text).strip()
