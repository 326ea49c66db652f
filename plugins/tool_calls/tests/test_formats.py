"""Trajectory formats (Hermes/Qwen, OpenAI), tool declarations, format errors, legality."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, Verdict
from rl_verifier_tool_calls.tasks import SEARCH_TOOL, eiffel_task, search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier

DOCS = json.dumps({"results": [{"doc_id": "r1", "text": "completed 1889"}]})


def judge(completion: Any, task: Task | None = None, **config: Any) -> Verdict:
    task = task or eiffel_task()
    verdict = ToolCallsVerifier(config).verify(
        task, Completion(task_id=task.id, completion=completion)
    )
    assert isinstance(verdict, Verdict)
    return verdict


def openai_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_openai_tool_calls_and_tool_replies() -> None:
    episode = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [openai_call("search", '{"query": "Eiffel"}')],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": DOCS},
        {"role": "assistant", "content": "1889 [r1]"},
    ]
    assert judge(episode).reward == pytest.approx(1.0)


def test_openai_bad_arguments_are_illegal() -> None:
    episode = [
        {"role": "assistant", "content": "", "tool_calls": [openai_call("search", "{oops")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "error"},
        {"role": "assistant", "content": "1889"},
    ]
    verdict = judge(episode)
    assert verdict.reward == pytest.approx(0.7)
    assert "malformed arguments JSON" in verdict.info["illegal_calls"][0]["reason"]


def test_qwen_tool_responses_in_user_turns() -> None:
    episode = [
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "search", "args": {"query": "Eiffel"}}</tool_call>',
        },
        {
            "role": "user",
            "content": "<tool_response>\n[r1] It was completed in 1889.\n</tool_response>",
        },
        {"role": "assistant", "content": "<think>r1 says 1889</think>1889 [r1]"},
    ]
    verdict = judge(episode)
    assert verdict.reward == pytest.approx(1.0), verdict.info


@pytest.mark.parametrize("key", ["arguments", "args", "parameters"])
def test_argument_aliases(key: str) -> None:
    call = json.dumps({"name": "search", key: {"query": "Eiffel"}})
    episode = [
        {"role": "assistant", "content": f"<tool_call>{call}</tool_call>"},
        {"role": "tool", "content": DOCS},
        {"role": "assistant", "content": "1889 [r1]"},
    ]
    assert judge(episode).components["legality"] == 1.0


def test_string_completion_has_inline_calls_but_no_tool_results() -> None:
    text = '<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call> 1889'
    verdict = judge(text)
    assert verdict.components["calls"] == 1.0
    assert verdict.reward == pytest.approx(0.8)
    assert judge("1889 [r1]").components["fabricated_share"] == 1.0


def test_schema_violations_are_illegal_with_reasons() -> None:
    episode = search_episode(2, "1889 [r1]")
    episode[0]["content"] = '<tool_call>{"name": "search", "arguments": {"top_k": 99}}</tool_call>'
    episode[2]["content"] = '<tool_call>{"name": "browse", "arguments": {}}</tool_call>'
    verdict = judge(episode)
    reasons = [c["reason"] for c in verdict.info["illegal_calls"]]
    assert "'query' is a required property" in reasons[0] or "99" in reasons[0]
    assert "unknown tool 'browse'" in reasons[1]
    assert verdict.components["legality"] == 0.0
    assert verdict.reward == pytest.approx(0.9)


@pytest.mark.parametrize("where", ["metadata", "config"])
def test_tools_from_metadata_or_config(where: str) -> None:
    plain = {
        "name": "search",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    task = Task(
        id="t",
        prompt="q",
        reference={"answers": ["1889"]},
        metadata={"tools": [plain]} if where == "metadata" else {},
    )
    config = {"tools": [plain]} if where == "config" else {}
    assert judge(search_episode(1), task, **config).reward == pytest.approx(1.0)


def test_undeclared_tools_make_calls_illegal() -> None:
    task = Task(id="t", prompt="q", reference={"answers": ["1889"]})
    verdict = judge(search_episode(1), task)
    assert verdict.components["legality"] == 0.0
    assert "none declared" in verdict.info["illegal_calls"][0]["reason"]


def test_bfcl_style_types_in_a_schema_are_understood() -> None:
    tool = {
        "name": "search",
        "parameters": {
            "type": "dict",
            "properties": {"query": {"type": "string"}, "weight": {"type": "float"}},
        },
    }
    task = Task(id="t", prompt="q", reference={"answers": ["1889"], "tools": [tool]})
    good = search_episode(1, arguments='{"query": "q", "weight": 2}')
    bad = search_episode(1, arguments='{"query": "q", "weight": "heavy"}')
    assert judge(good, task).components["legality"] == 1.0
    assert judge(bad, task).components["legality"] == 0.0


@pytest.mark.parametrize(
    ("episode", "reason"),
    [
        ([{"role": "assistant", "content": '<tool_call>{"name": "search"'}], "unterminated"),
        (search_episode(1)[:2], "no final answer after the last tool response"),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [openai_call("search", '{"query": "q"}')],
                }
            ],
            "only tool calls",
        ),
        ("1889 <tool_call>{}", "unterminated"),
        ("<think>1889</think>", "no final answer"),
    ],
)
def test_format_errors_score_zero(episode: Any, reason: str) -> None:
    verdict = judge(episode)
    assert verdict.status is Status.OK
    assert verdict.reward == 0.0
    assert reason in verdict.info["zero_reason"]


@pytest.mark.parametrize(
    "empty",
    ["", "   ", [], [{"role": "assistant", "content": None}], [{"role": "user", "content": "hi"}]],
)
def test_empty_output_is_invalid(empty: Any) -> None:
    assert judge(empty).status is Status.INVALID


def test_answer_tags_and_citation_prefix() -> None:
    assert judge(search_episode(1, "<answer>1889</answer> [doc:r1]")).reward == pytest.approx(1.0)
    assert judge(search_episode(1, "The answer is 1889 [r1]")).components["answer"] == 0.0


def test_custom_cite_pattern() -> None:
    verdict = judge(search_episode(1, "1889 (source: r1)"), cite_pattern=r"\(source: (\w+)\)")
    assert verdict.info["cited"] == ["r1"]
    assert verdict.reward == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ({"tools": [SEARCH_TOOL]}, "no 'answers'"),
        ({"answers": ["1889"], "tools": "search"}, "must be a list"),
        ({"answers": ["1889"], "tools": [{"parameters": {}}]}, "string 'name'"),
        (
            {"answers": ["1889"], "tools": [{"name": "search", "parameters": {"type": 7}}]},
            "invalid JSON Schema",
        ),
    ],
)
def test_broken_tasks_are_errors_not_judgements(reference: dict[str, Any], message: str) -> None:
    verdict = judge(search_episode(1), Task(id="t", prompt="q", reference=reference))
    assert verdict.status is Status.ERROR
    assert message in (verdict.error or "")
