"""The built-in models by name, where the core asks for them (``rl_verifier.train.local_models``):
``rl_verifier_server.models.builtins`` under its public path."""

from __future__ import annotations

from rl_verifier_server.models.builtins import MAKERS, builtin_directory, builtin_models

__all__ = ["MAKERS", "builtin_directory", "builtin_models"]
