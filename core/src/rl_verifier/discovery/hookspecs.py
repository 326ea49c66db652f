"""The hooks a plugin may implement, and the typed registrars they receive.

Each hook is documented in docs/plugin-hooks.md. Every ``register_*`` hook gets a
registrar to call, and every registrar fills one ``rl_verifier.base.registry.Registry``, so a
plugin's hook type-checks under ``mypy --strict``::

    @hookimpl
    def register_verifiers(register: VerifierRegistrar) -> None:
        register(MyVerifier)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import click
import pluggy

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rl_verifier.base.contracts import Task
    from rl_verifier.base.verifier import Verifier
    from rl_verifier.discovery.extensions import Loss, Preset, RewardProtocol

hookspec = pluggy.HookspecMarker("rl_verifier")
hookimpl = pluggy.HookimplMarker("rl_verifier")


class VerifierRegistrar(Protocol):
    """What ``register_verifiers`` receives."""

    def __call__(self, verifier: type[Verifier], /) -> None:
        """Offer ``verifier`` (a ``Verifier`` subclass whose ``name`` is a Python
        identifier) under its name.

        A name another plugin already holds is reported by ``rlv plugins``; the first
        plugin keeps it.
        """


class TaskSetRegistrar(Protocol):
    """What ``register_task_sets`` receives."""

    def __call__(self, name: str, load: Callable[[], list[Task]], /) -> None:
        """Offer the task set ``name``; ``load()`` is called only when a run asks for it."""


class EnvironmentRegistrar(Protocol):
    """What ``register_environments`` receives."""

    def __call__(
        self,
        name: str,
        factory: Callable[..., object],
        /,
        settings: type[BaseModel] | None = None,
    ) -> None:
        """Offer the training environment ``name``; ``factory(config)`` builds it for a run.

        With ``settings`` (a pydantic model), the run's ``environment_config`` table is
        validated against it (an unknown key is named) and the factory is called as
        ``factory(config, settings)``. The factory returns an
        ``rl_verifier.train.Environment``; the return type says ``object`` so that
        type-checking a plugin does not pull in the training stack (tinker, torch).
        """


class LossRegistrar(Protocol):
    """What ``register_losses`` receives."""

    def __call__(self, loss: Loss, /) -> None:
        """Offer ``loss`` (an ``rl_verifier.Loss``) to ``rlv train``, ``rlv new`` and
        ``rlv serve``: one table, read by all three."""


class SandboxBackendRegistrar(Protocol):
    """What ``register_sandbox_backends`` receives."""

    def __call__(
        self,
        name: str,
        open: Callable[[Any], object],
        /,
        *,
        processes: bool = False,
        async_processes: bool = False,
    ) -> None:
        """Offer the sandbox backend ``name``: ``open(options)`` gets an
        ``rl_verifier_sandbox.Options`` and returns a checked ``Sandbox`` (or raises
        ``SandboxUnavailable``). ``processes`` / ``async_processes``: it can hold live
        (or asyncio) processes."""


class RewardProtocolRegistrar(Protocol):
    """What ``register_reward_protocols`` receives."""

    def __call__(self, protocol: RewardProtocol, /) -> None:
        """Offer ``protocol`` (an ``rl_verifier.RewardProtocol``): ``rlv reward-server``
        answers it at ``protocol.path``."""


class PresetRegistrar(Protocol):
    """What ``register_presets`` receives."""

    def __call__(self, preset: Preset, /) -> None:
        """Offer ``preset`` (an ``rl_verifier.Preset``) to the ``rlv new --web`` builder;
        it is shown only while its verifier, task set and environment are registered."""


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


@hookspec
def register_losses(register: LossRegistrar) -> None:
    """Call ``register(Loss(...))`` for each training loss the plugin provides."""


@hookspec
def register_sandbox_backends(register: SandboxBackendRegistrar) -> None:
    """Call ``register(name, open)`` for each sandbox backend the plugin provides."""


@hookspec
def register_reward_protocols(register: RewardProtocolRegistrar) -> None:
    """Call ``register(RewardProtocol(...))`` for each reward-server wire protocol."""


@hookspec
def register_presets(register: PresetRegistrar) -> None:
    """Call ``register(Preset(...))`` for each starting point the builder page offers."""
