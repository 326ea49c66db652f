"""Lean 4 proof verifier for rl-verifier."""

from rl_verifier_lean.verifier import LeanVerifier

__all__ = ["LeanVerifier"]
