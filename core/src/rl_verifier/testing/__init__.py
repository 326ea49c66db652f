"""Test kit for plugin authors: subclass ``VerifierContract`` and list some ``Case``s, or,
for a group verifier, ``GroupVerifierContract`` and some ``GroupCase``s.

Also what a plugin's own tests reach for, so that they import only public names: the
plugins as loaded (``get_plugins``) or freshly discovered (``discover``), task sources and
environments resolved by name as ``rlv`` resolves them, the ``rlv`` command group for
``click.testing.CliRunner``, the JSONL readers of ``rlv verify`` and the datum packer.
The ``register_verifier`` and ``register_plugin`` fixtures load through ``pytest11``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from rl_verifier.testing.contract import (
    Case,
    GroupCase,
    GroupVerifierContract,
    VerifierContract,
    score_groups,
    score_once,
)

_LAZY = {
    "discover": ("rl_verifier.discovery.plugins", "discover"),
    "get_plugins": ("rl_verifier.discovery.plugins", "get_plugins"),
    "load_task_source": ("rl_verifier.scoring.resolve", "load_task_source"),
    "build_environment": ("rl_verifier.scoring.resolve", "environment"),
    "rlv_cli": ("rl_verifier.cli.app", "cli"),
    "read_tasks": ("rl_verifier.files.jsonl", "load_tasks"),
    "read_samples": ("rl_verifier.files.jsonl", "load_samples"),
    "pack": ("rl_verifier.train.packing", "pack"),
}

__all__ = [
    "Case",
    "GroupCase",
    "GroupVerifierContract",
    "VerifierContract",
    "score_groups",
    "score_once",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    return getattr(import_module(module), attribute)
