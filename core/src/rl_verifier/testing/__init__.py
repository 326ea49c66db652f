"""Test kit for plugin authors: subclass ``VerifierContract`` and list some ``Case``s."""

from rl_verifier.testing.contract import Case, VerifierContract, score_once

__all__ = ["Case", "VerifierContract", "score_once"]
