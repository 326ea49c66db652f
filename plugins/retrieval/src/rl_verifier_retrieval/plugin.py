"""Entry point: registers the ``retrieval`` verifier and the ``retrieval-example`` task set."""

from __future__ import annotations

from rl_verifier import TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_retrieval.tasks import example_tasks
from rl_verifier_retrieval.verifier import RetrievalVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(RetrievalVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("retrieval-example", example_tasks)
