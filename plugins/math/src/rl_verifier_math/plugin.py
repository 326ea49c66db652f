"""Entry point: registers the ``math`` verifier, its ``math-example`` task set and the
``reasoning-gym:NAME`` task sets."""

from __future__ import annotations

from rl_verifier import Preset, PresetRegistrar, TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_math.reasoning_gym_tasks import loaders
from rl_verifier_math.tasks import arithmetic_tasks
from rl_verifier_math.verifier import MathVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(MathVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("math-example", arithmetic_tasks)
    for name, load in loaders().items():
        register(name, load)


@hookimpl
def register_presets(register: PresetRegistrar) -> None:
    register(Preset("Reward math answers that check out", "math", "taskset:math-example"))
