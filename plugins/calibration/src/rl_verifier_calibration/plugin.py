"""Entry point: registers the ``calibration`` verifier with rl-verifier."""

from __future__ import annotations

from collections.abc import Callable

from rl_verifier.hookspecs import hookimpl
from rl_verifier.verifier import Verifier
from rl_verifier_calibration.verifier import CalibrationVerifier


@hookimpl
def register_verifiers(register: Callable[[type[Verifier]], None]) -> None:
    register(CalibrationVerifier)
