"""Sandboxed, tamper-resistant code-execution verifier for rl-verifier."""

from rl_verifier_pytest.verifier import PytestVerifier

__all__ = ["PytestVerifier"]
