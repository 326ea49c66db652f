"""The entry point registers the verifier and the example task set."""

from __future__ import annotations

from rl_verifier import Completion, Verdict
from rl_verifier.testing import discover
from rl_verifier_tool_calls.tasks import search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


def test_plugin_registers_verifier_and_task_set() -> None:
    plugins = discover()
    assert "tool_calls" in plugins.registry
    tasks = plugins.task_sets["tool_calls-example"].value()
    assert len(tasks) >= 3
    assert all(task.verifier == "tool_calls" for task in tasks)


def test_example_tasks_are_scorable() -> None:
    plugins = discover()
    verifier = ToolCallsVerifier()
    for task in plugins.task_sets["tool_calls-example"].value():
        answer = f"{task.reference['answers'][0]} [r1]"
        completion = Completion(task_id=task.id, completion=search_episode(1, answer))
        verdict = verifier.verify(task, completion)
        assert isinstance(verdict, Verdict)
        assert verdict.reward == 1.0, (task.id, verdict.info)
