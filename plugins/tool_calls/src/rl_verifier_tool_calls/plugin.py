"""Entry point: registers the ``tool_calls`` verifier and its example task set."""

from __future__ import annotations

from rl_verifier import TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_tool_calls.tasks import example_tasks
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(ToolCallsVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("tool_calls-example", example_tasks)
