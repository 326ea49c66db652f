"""rl-verifier: plugin-based verifiers that turn checks into RL rewards."""

from rl_verifier.contracts import Completion, Score, Status, Task, Verdict
from rl_verifier.hookspecs import (
    EnvironmentRegistrar,
    TaskSetRegistrar,
    VerifierRegistrar,
    hookimpl,
)
from rl_verifier.verifier import Verifier, VerifierConfig

__version__ = "0.1.0"

__all__ = [
    "Completion",
    "EnvironmentRegistrar",
    "Score",
    "Status",
    "Task",
    "TaskSetRegistrar",
    "Verdict",
    "Verifier",
    "VerifierConfig",
    "VerifierRegistrar",
    "__version__",
    "hookimpl",
]
