"""The hooks a plugin may implement, and the typed registrars they receive.

Each hook is documented in docs/plugin-hooks.md. A hook gets a registrar to call, so a
plugin's hook type-checks under ``mypy --strict``::

    @hookimpl
    def register_verifiers(register: VerifierRegistrar) -> None:
        register(MyVerifier)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import click
import pluggy

if TYPE_CHECKING:
    from rl_verifier.contracts import Task
    from rl_verifier.train.config import TrainConfig
    from rl_verifier.verifier import Verifier

hookspec = pluggy.HookspecMarker("rl_verifier")
hookimpl = pluggy.HookimplMarker("rl_verifier")


class VerifierRegistrar(Protocol):
    """What ``register_verifiers`` receives."""

    def __call__(self, verifier: type[Verifier], /) -> None:
        """Offer ``verifier`` (a ``Verifier`` subclass with a ``name``) under its name.

        A name another plugin already holds is reported by ``rlv plugins``; the first
        plugin keeps it.
        """


class TaskSetRegistrar(Protocol):
    """What ``register_task_sets`` receives."""

    def __call__(self, name: str, load: Callable[[], list[Task]], /) -> None:
        """Offer the task set ``name``; ``load()`` is called only when a run asks for it."""


class EnvironmentRegistrar(Protocol):
    """What ``register_environments`` receives."""

    def __call__(self, name: str, factory: Callable[[TrainConfig], object], /) -> None:
        """Offer the training environment ``name``; ``factory(config)`` builds it for a run.

        The factory returns an ``rl_verifier.train.environments.Environment``. The return
        type says ``object`` so that type-checking a plugin does not pull in the training
        stack (tinker, torch).
        """


@hookspec
def register_verifiers(register: VerifierRegistrar) -> None:
    """Call ``register(VerifierClass)`` once for each verifier the plugin provides."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add click commands to the ``rlv`` command group ``cli``."""


@hookspec
def register_task_sets(register: TaskSetRegistrar) -> None:
    """Call ``register(name, load)`` for each task set; ``load()`` returns a list of Tasks."""


@hookspec
def register_environments(register: EnvironmentRegistrar) -> None:
    """Call ``register(name, factory)``; ``factory(config)`` returns a training Environment."""
