"""The ``rlv`` command: the click group and its core commands, their shared options."""

from rl_verifier.cli.app import main

__all__ = ["main"]
