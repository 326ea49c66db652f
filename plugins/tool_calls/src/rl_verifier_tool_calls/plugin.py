"""Entry point: registers the ``tool_calls`` verifier and its example task set."""

from __future__ import annotations

from collections.abc import Callable

from rl_verifier.contracts import Task
from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier
from rl_verifier_tool_calls.tasks import example_tasks
from rl_verifier_tool_calls.verifier import ToolCallsVerifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(ToolCallsVerifier)


@hookimpl
def register_task_sets(register: Callable[[str, Callable[[], list[Task]]], None]) -> None:
    register("tool_calls-example", example_tasks)
