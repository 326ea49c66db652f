"""The one tool-call parser: Hermes/Qwen <tool_call> blocks, OpenAI tool_calls, BFCL
Python-call text and BFCL JSON."""

from __future__ import annotations

import ast
import json

import pytest

import rl_verifier
import rl_verifier.internal
from rl_verifier.parsing.toolcalls import (
    UNTERMINATED,
    CallSyntaxError,
    ToolCall,
    bracketed,
    message_tool_calls,
    openai_tool_calls,
    parse_bfcl_json_calls,
    parse_python_calls,
    parse_tool_calls,
    strip_tool_calls,
    tagged_tool_calls,
)


def test_exported_from_the_package() -> None:
    assert rl_verifier.parse_tool_calls is parse_tool_calls
    assert rl_verifier.ToolCall is ToolCall
    assert {"ToolCall", "parse_tool_calls"} <= set(rl_verifier.__all__)
    # the reader's parts and BFCL's formats are shared by our own packages only
    assert {"parse_python_calls", "tagged_tool_calls"} <= set(rl_verifier.internal.__all__)


# Hermes / Qwen --------------------------------------------------------------------------------


def test_hermes_blocks_in_order_with_each_arguments_key() -> None:
    text = (
        'a <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call> b '
        '<tool_call>\n{"name": "f", "arguments": "{\\"x\\": 2}"}\n</tool_call>'
        '<tool_call>{"name": "g", "parameters": {"y": 3}}</tool_call>'
        '<tool_call>{"name": "h", "args": {"z": 4}}</tool_call>'
        '<tool_call>{"name": "k"}</tool_call>'
    )
    assert parse_tool_calls(text) == [
        ToolCall("add", {"a": 1}),
        ToolCall("f", {"x": 2}),
        ToolCall("g", {"y": 3}),
        ToolCall("h", {"z": 4}),
        ToolCall("k", {}),
    ]
    assert strip_tool_calls(text).split() == ["a", "b"]
    assert parse_tool_calls("no calls here") == []


@pytest.mark.parametrize(
    ("body", "name", "error"),
    [
        ('{"name": "add"', None, "malformed tool call JSON"),
        ("[1, 2]", None, "JSON object"),
        ('{"arguments": {}}', None, "'name'"),
        ('{"name": "", "arguments": {}}', None, "'name'"),
        ('{"name": "f", "arguments": [1]}', "f", "must be a JSON object"),
        ('{"name": "f", "arguments": "{bad"}', "f", "malformed arguments JSON"),
    ],
)
def test_unusable_blocks_come_back_with_a_reason(body: str, name: str | None, error: str) -> None:
    (call,) = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert call.name == name and call.error is not None and error in call.error


def test_an_unclosed_block_is_reported() -> None:
    calls, unterminated = tagged_tool_calls('<tool_call>{"name": "a"}</tool_call><tool_call>{')
    assert calls == [ToolCall("a", {})] and unterminated
    assert parse_tool_calls("<tool_call>{")[-1].error == UNTERMINATED


# OpenAI ---------------------------------------------------------------------------------------


def test_openai_tool_calls_and_legacy_function_call() -> None:
    message = {
        "role": "assistant",
        "content": 'Let me look. <tool_call>{"name": "first", "arguments": {}}</tool_call>',
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"query": "Eiffel"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}},
        ],
        "function_call": {"name": "legacy", "arguments": '{"k": 1}'},
    }
    assert message_tool_calls(message) == [
        ToolCall("first", {}),
        ToolCall("search", {"query": "Eiffel"}, call_id="call_1"),
        ToolCall("now", {}, call_id="call_2"),
        ToolCall("legacy", {"k": 1}),
    ]
    (bad,) = openai_tool_calls(["not an object"])
    assert bad.name is None and bad.error is not None


# BFCL Python-call text ------------------------------------------------------------------------


def test_python_calls_with_literal_values() -> None:
    calls = parse_python_calls('[f(a=1, b="x"), m.g(c=[1, 2.5], d={"k": None}, e=(1, 2))]')
    assert calls == [
        ToolCall("f", {"a": 1, "b": "x"}),
        ToolCall("m.g", {"c": [1, 2.5], "d": {"k": None}, "e": (1, 2)}),
    ]
    assert parse_python_calls("f(a=True)") == [ToolCall("f", {"a": True})]
    assert parse_python_calls("```\n[f(a=1)]\n```") == [ToolCall("f", {"a": 1})]
    assert parse_python_calls("[]") == []
    assert parse_python_calls("") == []


def test_python_calls_read_other_values_as_bfcl_does() -> None:
    (call,) = parse_python_calls(
        "[f(1, a=x, b=np.array([1,2]), c=g(k=2), d=data['k'], e=2 ** 3 + 1, h=-4, i=not 1,"
        " j=..., **extra)]"
    )
    assert call.arguments == {
        "a": "x",  # a bare name is its text
        "b": "np.array([1, 2])",  # a call without keywords is its source
        "c": {"g": {"k": 2}},  # a call with keywords is a nested call
        "d": "data['k']",
        "e": 9,  # arithmetic on literals is evaluated
        "h": -4,
        "i": -1,  # BFCL negates whatever unary operator is applied to a constant
        "j": "...",
        "**": "extra",  # positional 1 is dropped; **extra is kept under "**"
    }


@pytest.mark.parametrize(
    "text",
    [
        "hello there",
        "```python\n[f(a=1)]\n```",  # the language tag stays and breaks the syntax
        "[1, 2]",
        "[f(a=1)] and more",
        "[f(a=math.pi)]",
        "[f(a=x + 1)]",
        "[f(a=-x)]",
        "[f(a={1, 2})]",
        "[f(a=lambda: 1)]",
        "[f(a=[i for i in y])]",
        "[f(a=2 ** 100000)]",
        "[f(a='ab' * 10**9)]",
        "[f(a=1 / 0)]",
        "[f(a={**b})]",
        "[" * 2000,
    ],
)
def test_python_text_that_is_not_calls(text: str) -> None:
    with pytest.raises(CallSyntaxError):
        parse_python_calls(text)


@pytest.mark.parametrize("text", ["I cannot answer that.", "[a, b]", "x = 1", "[\x00]", "\v"])
def test_text_without_a_call_is_refused_as_the_parser_refuses_it(text: str) -> None:
    """Text holding no "(" is refused before parsing; the parser would refuse it too."""
    with pytest.raises(CallSyntaxError):
        parse_python_calls(text)
    assert not _parses_as_a_call_list(text)


def _parses_as_a_call_list(text: str) -> bool:
    try:
        body = ast.parse(bracketed(text), mode="eval").body
    except (SyntaxError, ValueError):
        return False
    return isinstance(body, ast.List) and all(isinstance(e, ast.Call) for e in body.elts)


@pytest.mark.parametrize("text", ["[ ]", "[\n]", "[ # no call\n]", "[\\\n]"])
def test_an_empty_list_without_a_call_is_no_call(text: str) -> None:
    assert parse_python_calls(text) == []


# BFCL JSON ------------------------------------------------------------------------------------


def test_bfcl_json_calls() -> None:
    calls = [{"function": "f", "parameters": {"a": 1}}, {"function": "g", "parameters": {}}]
    text = "Here you go: " + json.dumps(calls)
    assert parse_bfcl_json_calls(text) == [ToolCall("f", {"a": 1}), ToolCall("g", {})]
    assert parse_bfcl_json_calls('[{"function": "f", "parameters": {"a": 1}}, 7]') == [
        ToolCall("f", {"a": 1})
    ]
    (odd,) = parse_bfcl_json_calls('[{"function": "f", "parameters": [1]}]')
    assert odd.error is not None
    assert parse_bfcl_json_calls("not json at all") == []
    with pytest.raises(CallSyntaxError):
        parse_bfcl_json_calls('[{"name": "f", "arguments": {}}]')
