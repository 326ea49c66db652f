"""Entry point: registers the ``calibration`` verifier and its example task set."""

from __future__ import annotations

from rl_verifier import Preset, PresetRegistrar, TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_calibration.tasks import example_tasks
from rl_verifier_calibration.verifier import CalibrationVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(CalibrationVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("calibration-example", example_tasks)


@hookimpl
def register_presets(register: PresetRegistrar) -> None:
    title = "Reward calibrated probabilities"
    register(Preset(title, "calibration", "taskset:calibration-example"))
