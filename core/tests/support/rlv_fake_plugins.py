"""Sources of fake plugins for discovery tests."""

from collections.abc import Callable
from pathlib import Path

MakePlugin = Callable[..., Path]

GOOD_PLUGIN = """
from rl_verifier import Verdict, Verifier, hookimpl

class Good(Verifier):
    '''Always right.'''
    name = "good"
    def verify(self, task, completion):
        return Verdict.ok(1.0)

@hookimpl
def register_verifiers(register):
    register(Good)
"""
