"""Entry point: registers the ``retrieval`` verifier and the ``retrieval-example`` task set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier
from rl_verifier_retrieval.tasks import example_tasks
from rl_verifier_retrieval.verifier import RetrievalVerifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(RetrievalVerifier)


@hookimpl
def register_task_sets(register: Callable[[str, Callable[[], list[Any]]], None]) -> None:
    register("retrieval-example", example_tasks)
