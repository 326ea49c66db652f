"""The core's contract tests, for trajectory and BFCL modes."""

from __future__ import annotations

from typing import Any, ClassVar

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_tool_calls.tasks import eiffel_task, search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


class TestToolCallsContract(VerifierContract):
    verifier_class = ToolCallsVerifier
    config: ClassVar[dict[str, Any]] = {}

    def cases(self) -> list[Case]:
        task = eiffel_task()
        return [
            Case(task, search_episode(1, "1889 [r1]"), Status.OK, 1.0),
            Case(task, search_episode(3, "1889 [r1]"), Status.OK, 0.95),
            Case(task, search_episode(5, "1889 [r1]"), Status.OK, 0.0),
            Case(task, "1889", Status.OK, 0.8),
            Case(task, search_episode(1, "1889 [r7]"), Status.OK, 0.3),
            Case(task, search_episode(1, "1890 [r1]"), Status.OK, 0.3),
            Case(task, "", Status.INVALID, 0.0),
            Case(Task(id="no-gold", prompt="q"), "1889", Status.ERROR),
        ]


class TestToolCallsContractBfcl(TestToolCallsContract):
    config: ClassVar[dict[str, Any]] = {"mode": "bfcl"}
    can_be_invalid: ClassVar[bool] = False  # BFCL judges every reply; an empty one is no call

    def cases(self) -> list[Case]:
        fn = {
            "name": "add",
            "parameters": {
                "type": "dict",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        }
        reference = {
            "question": {"id": "simple_0", "function": [fn]},
            "possible_answer": {"id": "simple_0", "ground_truth": [{"add": {"a": [1], "b": [2]}}]},
        }
        task = Task(id="simple_0", prompt="Add 1 and 2.", reference=reference)
        return [
            Case(task, "[add(a=1, b=2)]", Status.OK, 1.0),
            Case(task, "[add(a=1, b=3)]", Status.OK, 0.0),
            Case(task, "", Status.OK, 0.0),
        ]
