"""Calibration verifier for rl-verifier: proper scoring rules on stated probabilities."""

from rl_verifier_calibration.answer import AnswerError, extract_answer
from rl_verifier_calibration.forecast import Forecast, ForecastError, extract_probability
from rl_verifier_calibration.metrics import calibration_metrics
from rl_verifier_calibration.reference import OutcomeError, read_outcome
from rl_verifier_calibration.verifier import CalibrationConfig, CalibrationVerifier

__version__ = "0.1.0"

__all__ = [
    "AnswerError",
    "CalibrationConfig",
    "CalibrationVerifier",
    "Forecast",
    "ForecastError",
    "OutcomeError",
    "__version__",
    "calibration_metrics",
    "extract_answer",
    "extract_probability",
    "read_outcome",
]
