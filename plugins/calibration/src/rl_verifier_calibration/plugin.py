"""Entry point: registers the ``calibration`` verifier and its example task set."""

from __future__ import annotations

from collections.abc import Callable

from rl_verifier.contracts import Task
from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier
from rl_verifier_calibration.tasks import example_tasks
from rl_verifier_calibration.verifier import CalibrationVerifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(CalibrationVerifier)


@hookimpl
def register_task_sets(register: Callable[[str, Callable[[], list[Task]]], None]) -> None:
    register("calibration-example", example_tasks)
