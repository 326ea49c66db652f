"""Training loop for rl-verifier: RL on verifier rewards through the Tinker SDK.

Public names for running training, for writing environments (a plugin's
``register_environments``) and for a loop of one's own (``rlv new --standalone``): the
chat template as ``rlv train`` applies it, its task loading, data order, sampling seeds and
group advantages. Most load on first use, so that discovering plugins does not import the
training stack.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier.train.config import TrainConfig, absolute_paths, load_config

if TYPE_CHECKING:
    from rl_verifier.base.contracts import Task
    from rl_verifier.train.advantages import group_advantages, is_degenerate
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
    from rl_verifier.train.renderer import Renderer
    from rl_verifier.train.rollouts import group_seed, tasks_for_step
    from rl_verifier.train.rundir import RunDir

_LAZY = {
    "TOOL_RECORD_KEY": "environments",
    "Environment": "environments",
    "Episode": "environments",
    "SingleTurn": "environments",
    "ToolUse": "environments",
    "Turn": "environments",
    "run_episode": "environments",
    "run_group": "environments",
    "task_messages": "environments",
    "Renderer": "renderer",
    "group_advantages": "advantages",
    "is_degenerate": "advantages",
    "group_seed": "rollouts",
    "tasks_for_step": "rollouts",
    "RunDir": "rundir",
}

__all__ = [
    "TOOL_RECORD_KEY",
    "Environment",
    "Episode",
    "Renderer",
    "RunDir",
    "SingleTurn",
    "ToolUse",
    "TrainConfig",
    "Turn",
    "group_advantages",
    "group_seed",
    "is_degenerate",
    "load_config",
    "load_tasks",
    "run",
    "run_episode",
    "run_group",
    "task_messages",
    "tasks_for_step",
]


def run(config: TrainConfig, resume: Path | None = None) -> Path:
    """Train; returns the run directory. ``resume`` continues a run from its checkpoint."""
    from rl_verifier.train.loop import run as run_loop

    return run_loop(config, resume)


def load_tasks(source: str, relative_to: Path | None = None) -> list[Task]:
    """A run's tasks as ``rlv train`` loads them: from ``taskset:NAME`` or a JSONL path
    (relative to ``relative_to`` when given, as a TOML's are to its folder), in order."""
    from rl_verifier.train.preflight import load_tasks as load

    if relative_to is not None:
        source = absolute_paths({"tasks": source}, relative_to)["tasks"]
    return load(source)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"rl_verifier.train.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'rl_verifier.train' has no attribute '{name}'")
