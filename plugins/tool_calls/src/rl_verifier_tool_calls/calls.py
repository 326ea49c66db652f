"""Tool calls as written by models: Hermes/Qwen ``<tool_call>`` blocks and OpenAI ``tool_calls``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
OPEN_CALL = "<tool_call>"
# Keys a call's arguments may be written under, in order of preference.
ARGUMENT_KEYS = ("arguments", "args", "parameters")


@dataclass(frozen=True)
class Call:
    """One tool call; ``error`` says why it could not be read (it is then illegal)."""

    name: str | None
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    call_id: str | None = None


def inline_calls(text: str) -> tuple[list[Call], bool]:
    """The ``<tool_call>`` blocks of ``text`` and whether a ``<tool_call>`` is left unclosed."""
    calls: list[Call] = []
    end = 0
    for match in CALL_RE.finditer(text):
        calls.append(call_from_json(match.group(1)))
        end = match.end()
    return calls, OPEN_CALL in text[end:]


def strip_calls(text: str) -> str:
    """``text`` without its ``<tool_call>`` blocks."""
    return CALL_RE.sub(" ", text) if OPEN_CALL in text else text


def call_from_json(body: str) -> Call:
    """A call from the JSON body of a ``<tool_call>`` block."""
    try:
        obj = json.loads(body.strip())
    except json.JSONDecodeError as exc:
        return Call(None, error=f"malformed tool call JSON: {exc.msg}")
    if not isinstance(obj, dict):
        return Call(None, error="a tool call must be a JSON object with a name and arguments")
    return call_from_object(obj)


def call_from_object(obj: dict[str, Any], call_id: str | None = None) -> Call:
    """A call from ``{"name", "arguments"|"args"|"parameters"}`` or OpenAI's ``function`` form."""
    function = obj.get("function")
    if isinstance(function, dict):
        call_id = obj.get("id") if isinstance(obj.get("id"), str) else call_id
        obj = function
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return Call(None, error="a tool call needs a non-empty string 'name'", call_id=call_id)
    raw: Any = next((obj[key] for key in ARGUMENT_KEYS if key in obj), {})
    if isinstance(raw, str):  # OpenAI sends arguments as a JSON string
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            return Call(name, error=f"malformed arguments JSON: {exc.msg}", call_id=call_id)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return Call(name, error="tool call arguments must be a JSON object", call_id=call_id)
    return Call(name, raw, call_id=call_id)


def structured_calls(items: Iterable[Any]) -> list[Call]:
    """Calls from a message's ``tool_calls`` list (OpenAI) or legacy ``function_call``."""
    calls: list[Call] = []
    for item in items:
        if isinstance(item, dict):
            calls.append(call_from_object(item))
        else:
            calls.append(Call(None, error="a tool_calls entry must be an object"))
    return calls
