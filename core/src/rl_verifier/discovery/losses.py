"""The training losses, by name: the one table that configs, datum packing, ``rlv new``,
the builder page, ``rlv serve`` and the docs read.

Each ``Loss`` says what a datum must carry (``inputs``) and which ``loss_fn_config`` keys
the loss takes, with the defaults the hosted API and ``rlv serve`` use. The built-in
losses below are registered by the core's built-in plugin; a plugin adds one with the
``register_losses`` hook (one registration; ``compute`` is its implementation in
``rlv serve``, which runs the built-ins by name). The table itself is
``get_plugins().losses``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rl_verifier.base.loss import (
    BUILTIN_LOSSES,
    CLIP_INPUTS,
    CROSS_ENTROPY,
    RL_INPUTS,
    SEQUENCE_INPUTS,
    Loss,
)

if TYPE_CHECKING:
    from rl_verifier.base.registry import Registry

__all__ = [
    "BUILTIN_LOSSES",
    "CLIP_INPUTS",
    "CROSS_ENTROPY",
    "RL_INPUTS",
    "SEQUENCE_INPUTS",
    "Loss",
    "get_loss",
    "loss_config_problem",
    "loss_table",
    "policy_loss_problem",
    "policy_losses",
    "register_loss",
]

def loss_table() -> Registry[Loss]:
    """Every registered loss: the built-ins and those plugins add."""
    from rl_verifier.discovery.plugins import get_plugins

    return get_plugins().losses


def get_loss(name: str) -> Loss:
    """The loss ``name``; a UserError listing the known ones when there is none."""
    return loss_table().value(name)


def policy_losses() -> tuple[str, ...]:
    """Losses ``rlv train`` can optimise on rewards, in registration order."""
    return tuple(loss.name for loss in loss_table().values() if loss.policy)


def policy_loss_problem(name: str) -> str | None:
    """Why ``name`` is not a loss ``rlv train`` can optimise (None when it is one)."""
    from rl_verifier.base.registry import unknown_message

    if name in policy_losses():
        return None
    return unknown_message("loss", name, list(policy_losses()))


def loss_config_problem(name: str, config: Mapping[str, float]) -> str | None:
    """Why ``config`` does not suit the loss ``name``: a key it does not take, with the
    keys it does (None when every key is one of them)."""
    known = get_loss(name).config
    unknown = sorted(set(config) - set(known))
    if not unknown:
        return None
    accepted = ", ".join(known) or "none"
    return f"loss_config key '{unknown[0]}' is not used by loss '{name}' ({accepted})"


def register_loss(loss: Loss) -> Loss:
    """Deprecated: implement the ``register_losses`` hook in a plugin instead."""
    warnings.warn(
        "register_loss is deprecated: register losses with the register_losses hook",
        DeprecationWarning,
        stacklevel=2,
    )
    loss_table().add(loss.name, loss, "builtin")
    return loss
