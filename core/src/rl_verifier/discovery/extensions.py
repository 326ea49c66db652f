"""What a plugin registers, besides verifiers, task sets and commands: the record of each
kind of extension, held in its ``Registry`` (``rl_verifier.discovery.plugins.Plugins``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.base.loss import Loss

if TYPE_CHECKING:
    from rl_verifier.base.contracts import Score
    from rl_verifier.reward_server.settings import ServerOptions
    from rl_verifier.reward_server.wire import Batch

__all__ = ["EnvironmentFactory", "Loss", "Preset", "RewardProtocol", "SandboxBackend"]


@dataclass(frozen=True)
class EnvironmentFactory:
    """A registered training environment: its factory and, when it takes settings, their
    pydantic model (validated from the run's ``environment_config``)."""

    factory: Callable[..., object]
    settings: type[BaseModel] | None = None

    def __call__(self, config: Any) -> object:
        """The environment for a run whose ``TrainConfig`` is ``config``."""
        if self.settings is None:
            return self.factory(config)
        return self.factory(config, self.settings_for(config))

    def settings_for(self, config: Any) -> BaseModel | None:
        """The run's ``environment_config`` as this environment's settings (a UserError
        naming each bad key)."""
        given: Mapping[str, Any] = getattr(config, "environment_config", None) or {}
        if self.settings is None:
            if given:
                raise UserError(
                    f"environment_config: this environment takes no settings "
                    f"(given: {', '.join(sorted(given))})"
                )
            return None
        try:
            return self.settings.model_validate(dict(given))
        except ValidationError as exc:
            problems = validation_problems(exc, noun="setting")
            raise UserError("bad environment_config: " + "; ".join(problems)) from None


@dataclass(frozen=True)
class SandboxBackend:
    """A sandbox backend a plugin adds: ``open(options)`` returns a checked ``Sandbox``."""

    name: str
    open: Callable[[Any], object]
    processes: bool = False  # Sandbox.open_process works: live pipes
    async_processes: bool = False  # Sandbox.open_async_process works: asyncio pipes


@dataclass(frozen=True)
class RewardProtocol:
    """A wire protocol of ``rlv reward-server``: the path it answers, how a request body
    becomes a batch of samples and how the batch's scores become the answer body."""

    name: str
    path: str
    parse: Callable[[bytes], Batch]
    answer: Callable[[list[Score], ServerOptions], bytes]


@dataclass(frozen=True)
class Preset:
    """A starting point on the builder page, offered only while its verifier, task set and
    environment are registered."""

    title: str
    verifier: str
    task: str | None = None  # a task source: a path or taskset:NAME
    environment: str = "single_turn"
    max_turns: int = 1
