"""Training loop for rl-verifier: RL on verifier rewards through the Tinker SDK.

Public names for running training and for writing environments (a plugin's
``register_environments``). The environment names load on first use, so that
discovering plugins does not import the training stack.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier.train.config import TrainConfig, load_config

if TYPE_CHECKING:
    from rl_verifier.train.environments import (
        TOOL_RECORD_KEY,
        Environment,
        Episode,
        SingleTurn,
        ToolUse,
        Turn,
        run_episode,
        run_group,
        task_messages,
    )

_ENVIRONMENT_NAMES = (
    "TOOL_RECORD_KEY",
    "Environment",
    "Episode",
    "SingleTurn",
    "ToolUse",
    "Turn",
    "run_episode",
    "run_group",
    "task_messages",
)

__all__ = [
    "TOOL_RECORD_KEY",
    "Environment",
    "Episode",
    "SingleTurn",
    "ToolUse",
    "TrainConfig",
    "Turn",
    "load_config",
    "run",
    "run_episode",
    "run_group",
    "task_messages",
]


def run(config: TrainConfig, resume: Path | None = None) -> Path:
    """Train; returns the run directory. ``resume`` continues a run from its checkpoint."""
    from rl_verifier.train.loop import run as run_loop

    return run_loop(config, resume)


def __getattr__(name: str) -> Any:
    if name in _ENVIRONMENT_NAMES:
        return getattr(import_module("rl_verifier.train.environments"), name)
    raise AttributeError(f"module 'rl_verifier.train' has no attribute '{name}'")
