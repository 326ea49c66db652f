"""rlv train's tool environment and this verifier read the same reply the same way (issue 15:
one tool-call parser, in core): the calls the environment runs are the calls scored here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rl_verifier import Task
from rl_verifier.internal import UNTERMINATED
from rl_verifier.train import TOOL_RECORD_KEY, ToolUse
from rl_verifier_tool_calls.trajectory import read_trajectory

REPLIES = {
    "each arguments key": (
        '<tool_call>{"name": "lookup", "arguments": {"q": "a"}}</tool_call>'
        '<tool_call>{"name": "lookup", "parameters": {"q": "b"}}</tool_call>'
        '<tool_call>{"name": "lookup", "args": {"q": "c"}}</tool_call>'
    ),
    "arguments as a JSON string": (
        '<tool_call>\n{"name": "lookup", "arguments": "{\\"q\\": \\"d\\"}"}\n</tool_call>'
    ),
    "no arguments": '<tool_call>{"name": "lookup"}</tool_call>',
    "unusable calls": (
        '<tool_call>{"name": "lookup", "arguments": {"q": 1,}}</tool_call>'
        "<tool_call>[1, 2]</tool_call>"
        '<tool_call>{"arguments": {}}</tool_call>'
        '<tool_call>{"name": "lookup", "arguments": [1]}</tool_call>'
    ),
}
UNCLOSED = '<tool_call>{"name": "lookup", "arguments": {"q": "e"}}'


def lookup(q: Any = None) -> str:
    return json.dumps({"q": q})


def environment_calls(reply: str) -> list[tuple[str | None, dict[str, Any], bool]]:
    """(name, arguments, readable) of each call ToolUse runs for ``reply``."""
    env = ToolUse({"lookup": lookup})
    messages = env.respond(Task(id="t", prompt="p"), [], reply) or []
    records = [m[TOOL_RECORD_KEY] for m in messages]
    return [(r["name"], r["arguments"], "error" not in r) for r in records]


def verifier_calls(reply: str) -> list[tuple[str | None, dict[str, Any], bool]]:
    trajectory = read_trajectory(reply)
    return [(c.name, c.arguments, c.error is None) for c in trajectory.calls]


@pytest.mark.parametrize("reply", list(REPLIES.values()), ids=list(REPLIES))
def test_training_and_scoring_read_the_same_calls(reply: str) -> None:
    assert environment_calls(reply) == verifier_calls(reply)


def test_an_unclosed_block_is_run_by_neither() -> None:
    """Training answers an error result; scoring counts a format error (reward 0)."""
    assert environment_calls(UNCLOSED) == [(None, {}, False)]
    assert verifier_calls(UNCLOSED) == []
    assert read_trajectory(UNCLOSED).format_error == UNTERMINATED


def test_the_replies_cover_readable_and_unreadable_calls() -> None:
    readable = environment_calls(REPLIES["each arguments key"])
    assert [args for _, args, ok in readable if ok] == [{"q": "a"}, {"q": "b"}, {"q": "c"}]
    assert not any(ok for _, _, ok in environment_calls(REPLIES["unusable calls"]))
