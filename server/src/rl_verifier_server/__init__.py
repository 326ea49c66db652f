"""A local Tinker-compatible training server for rl-verifier."""

__version__ = "0.1.0"
