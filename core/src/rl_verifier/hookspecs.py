"""The hooks a plugin may implement. Each is documented in docs/plugin-hooks.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("rl_verifier")
hookimpl = pluggy.HookimplMarker("rl_verifier")


@hookspec
def register_verifiers(register: Callable[[type[Any]], None]) -> None:
    """Call ``register(VerifierClass)`` once for each verifier the plugin provides."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``rlv`` command group ``cli``."""


@hookspec
def register_task_sets(register: Callable[[str, Callable[[], list[Any]]], None]) -> None:
    """Call ``register(name, load)`` for each task set; ``load()`` returns a list of Tasks."""


@hookspec
def register_environments(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Call ``register(name, factory)``; ``factory(config)`` returns a training Environment."""
