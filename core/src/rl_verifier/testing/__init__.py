"""Test kit for plugin authors: subclass ``VerifierContract`` and list some ``Case``s, or,
for a group verifier, ``GroupVerifierContract`` and some ``GroupCase``s."""

from rl_verifier.testing.contract import (
    Case,
    GroupCase,
    GroupVerifierContract,
    VerifierContract,
    score_groups,
    score_once,
)

__all__ = [
    "Case",
    "GroupCase",
    "GroupVerifierContract",
    "VerifierContract",
    "score_groups",
    "score_once",
]
