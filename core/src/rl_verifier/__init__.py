"""rl-verifier: plugin-based verifiers that turn checks into RL rewards."""

from rl_verifier.contracts import Completion, Score, Status, Task, Verdict
from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier, VerifierConfig

__version__ = "0.1.0"

__all__ = [
    "Completion",
    "Score",
    "Status",
    "Task",
    "Verdict",
    "Verifier",
    "VerifierConfig",
    "__version__",
    "hookimpl",
]
