"""The training package's own registration: the ``single_turn`` environment.

Registered as the built-in plugin ``training`` (distribution ``rl-verifier``), so that the
core's built-in verifiers do not depend on the training package.
"""

from __future__ import annotations

from rl_verifier.discovery.hookspecs import EnvironmentRegistrar, hookimpl
from rl_verifier.train.config import TrainConfig


def single_turn(config: TrainConfig) -> object:
    """Prompt, one completion, done."""
    from rl_verifier.train.environments import SingleTurn

    return SingleTurn()


@hookimpl
def register_environments(register: EnvironmentRegistrar) -> None:
    register("single_turn", single_turn)
