"""Math-answer verifier for rl-verifier, built on Hugging Face's math-verify."""

from rl_verifier_math.config import MathConfig
from rl_verifier_math.extract import Extracted, extract
from rl_verifier_math.reference import ReferenceError, reference_answers
from rl_verifier_math.tasks import arithmetic_tasks, task_from_row
from rl_verifier_math.verifier import MathVerifier

__version__ = "0.1.0"

__all__ = [
    "Extracted",
    "MathConfig",
    "MathVerifier",
    "ReferenceError",
    "__version__",
    "arithmetic_tasks",
    "extract",
    "reference_answers",
    "task_from_row",
]
