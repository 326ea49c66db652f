"""Entry point: registers the ``pytest`` verifier and the ``pytest-example`` task set."""

from __future__ import annotations

from rl_verifier import TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_pytest.tasks import example_tasks
from rl_verifier_pytest.verifier import PytestVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(PytestVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("pytest-example", example_tasks)
