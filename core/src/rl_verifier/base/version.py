"""The version of the rl-verifier distribution (its pyproject says the same)."""

__version__ = "0.1.0"
