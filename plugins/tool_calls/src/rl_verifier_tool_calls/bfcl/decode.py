"""The calls a reply makes, read as BFCL reads them for a prompt or a function-calling model."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rl_verifier import Text, ToolCall, after_reasoning, content_text
from rl_verifier.internal import (
    OPEN_TAG,
    CallSyntaxError,
    bracketed,
    message_tool_calls,
    openai_tool_calls,
    parse_bfcl_json_calls,
    parse_python_calls,
)
from rl_verifier_tool_calls.bfcl.categories import Language
from rl_verifier_tool_calls.bfcl.checker import Call
from rl_verifier_tool_calls.bfcl.python_calls import read_python_calls
from rl_verifier_tool_calls.bfcl.sourcecalls import java_calls, javascript_calls

FENCE_RE = re.compile(r"^\s*```[\w-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)


NO_EXTRA: Mapping[str, Any] = {}


class Reply:
    """The last assistant turn: its text (after any ``</think>``) and its structured calls."""

    __slots__ = ("message", "text")

    def __init__(self, text: str = "", message: Mapping[str, Any] = NO_EXTRA) -> None:
        self.text = text
        self.message = message  # the turn's keys besides role and content (read only)

    @property
    def has_calls(self) -> bool:
        """Whether it holds tool calls or ``<tool_call>`` blocks (cheaper than ``calls``)."""
        message = self.message
        return bool(
            message.get("tool_calls") or message.get("function_call") or OPEN_TAG in self.text
        )

    @property
    def calls(self) -> list[ToolCall]:
        """Its tool calls: ``tool_calls``, ``function_call`` and ``<tool_call>`` blocks."""
        message = self.message
        tool_calls = message.get("tool_calls")
        if OPEN_TAG not in self.text and "function_call" not in message:
            # the commonest function-calling reply: tool_calls only
            return openai_tool_calls(tool_calls) if isinstance(tool_calls, list) else []
        return message_tool_calls(
            {
                "content": self.text,
                "tool_calls": tool_calls,
                "function_call": message.get("function_call"),
            }
        )


class DecodeFailure(Exception):
    """The reply cannot be read as calls; ``error_type`` is BFCL's name for why."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


FAILED = "ast_decoder:decoder_failed"
MAX_CALL_TEXT_CHARS = 100_000  # BFCL answers are under 2,000; decoding is linear past this
WRONG_FORMAT = "ast_decoder:decoder_wrong_output_format"


def last_reply(completion: Text) -> Reply:
    """The reply to check: a string completion, or the last assistant message of a chat."""
    if isinstance(completion, str):
        text, message = completion, NO_EXTRA
    else:
        for last in reversed(completion):
            if last.role == "assistant":
                break
        else:
            return Reply()
        text, message = content_text(last.content), last.model_extra or NO_EXTRA
    text = after_reasoning(text)
    return Reply(text, message)


def prompt_calls(
    text: str, language: Language, return_format: str, unwrap_fence: bool = False
) -> list[Call]:
    """Calls written as text by a prompt model: Python syntax (or BFCL JSON) for Python
    categories, Java or JavaScript syntax for theirs."""
    if len(text) > MAX_CALL_TEXT_CHARS:  # the model's text: its cost is bounded up front
        raise DecodeFailure(
            FAILED, f"the output is longer than {MAX_CALL_TEXT_CHARS} characters (limit)"
        )
    if unwrap_fence:
        fenced = FENCE_RE.match(text)
        text = fenced.group(1) if fenced else text
    try:
        if language == "java":
            return _found(java_calls(text))
        if language == "javascript":
            return _found(javascript_calls(text))
        if return_format == "json":
            parsed = parse_bfcl_json_calls(text)
        else:
            common = read_python_calls(bracketed(text))  # the common shape, without ast
            if common is not None:
                return list(common)
            parsed = parse_python_calls(text)
    except CallSyntaxError as exc:
        raise DecodeFailure(FAILED, f"cannot decode the output: {exc}") from None
    return _usable(parsed)


def structured_calls(calls: Sequence[ToolCall]) -> list[Call]:
    """Calls a function-calling model made: its tool calls, every one readable."""
    if not calls:
        raise DecodeFailure(FAILED, "no tool call: the reply is text")
    for call in calls:
        if call.error is not None or call.name is None:
            raise DecodeFailure(FAILED, f"cannot decode a tool call: {call.error}")
    return [(c.name, c.arguments) for c in calls]


def _found(calls: list[tuple[str, dict[Any, Any]]] | None) -> list[Call]:
    if calls is None:
        raise DecodeFailure(WRONG_FORMAT, "no function call found in the output")
    return list(calls)


def _usable(calls: Sequence[ToolCall]) -> list[Call]:
    for call in calls:
        if call.error is not None:
            raise DecodeFailure(WRONG_FORMAT, f"{call.name}: {call.error}")
    return [(c.name, c.arguments) for c in calls]
