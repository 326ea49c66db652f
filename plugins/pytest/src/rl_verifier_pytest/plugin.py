"""Entry point: registers the ``pytest`` verifier and the ``pytest-example`` task set."""

from __future__ import annotations

from rl_verifier import Preset, PresetRegistrar, TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_pytest.tasks import example_tasks
from rl_verifier_pytest.verifier import PytestVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(PytestVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("pytest-example", example_tasks)


@hookimpl
def register_presets(register: PresetRegistrar) -> None:
    title = "Reward sandboxed code that passes its tests"
    register(Preset(title, "pytest", "taskset:pytest-example"))
