"""Entry point: registers the ``pytest`` verifier and the ``pytest-example`` task set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier
from rl_verifier_pytest_exec.tasks import example_tasks
from rl_verifier_pytest_exec.verifier import PytestVerifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(PytestVerifier)


@hookimpl
def register_task_sets(register: Callable[[str, Callable[[], list[Any]]], None]) -> None:
    register("pytest-example", example_tasks)
