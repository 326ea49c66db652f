"""The Tinker losses, by name: the one list that configs, datum packing, ``rlv new``, the
builder page and the docs read.

Each entry says what a datum must carry (``loss_fn_inputs``) and which ``loss_fn_config``
keys the loss takes, with the defaults the hosted API and ``rlv serve`` use. Adding a loss
to the trainer is one ``register_loss`` call here (plus its implementation in
``rlv serve``, whose table a test holds against this one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CROSS_ENTROPY = "cross_entropy"
RL_INPUTS = ("target_tokens", "logprobs", "advantages")


@dataclass(frozen=True)
class Loss:
    """One loss: its inputs, its settings and whether it trains a policy on rewards."""

    name: str
    description: str
    inputs: tuple[str, ...] = RL_INPUTS
    config: Mapping[str, float] = field(default_factory=dict)
    policy: bool = True  # an RL loss on advantages (``rlv train``'s ``loss``)


LOSSES: dict[str, Loss] = {}


def register_loss(loss: Loss) -> Loss:
    """Add a loss; a name can be registered once."""
    if loss.name in LOSSES:
        raise ValueError(f"loss '{loss.name}' is already registered")
    LOSSES[loss.name] = loss
    return loss


def policy_losses() -> tuple[str, ...]:
    """Losses ``rlv train`` can optimise on rewards, in registration order."""
    return tuple(name for name, loss in LOSSES.items() if loss.policy)


def policy_loss_problem(name: str) -> str | None:
    """Why ``name`` is not a loss ``rlv train`` can optimise (None when it is one)."""
    if name in policy_losses():
        return None
    return f"unknown loss '{name}'; choose one of: {', '.join(policy_losses())}"


def loss_config_problem(name: str, config: Mapping[str, float]) -> str | None:
    """Why ``config`` does not suit the loss ``name``: a key it does not take, with the
    keys it does (None when every key is one of them)."""
    known = LOSSES[name].config
    unknown = sorted(set(config) - set(known))
    if not unknown:
        return None
    accepted = ", ".join(known) or "none"
    return f"loss_config key '{unknown[0]}' is not used by loss '{name}' ({accepted})"


register_loss(
    Loss(
        CROSS_ENTROPY,
        "Supervised: negative log-likelihood of the target tokens, weighted by 'weights'.",
        inputs=("target_tokens", "weights"),
        policy=False,
    )
)
register_loss(
    Loss(
        "importance_sampling",
        "Policy gradient with the ratio of the learner's to the sampler's probability.",
    )
)
register_loss(
    Loss(
        "ppo",
        "PPO's clipped surrogate objective on the probability ratio.",
        config={"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    )
)
register_loss(
    Loss(
        "cispo",
        "CISPO: the clipped, detached ratio weights the log-probability gradient.",
        config={"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
    )
)
register_loss(
    Loss(
        "dro",
        "DRO: advantage-weighted log-probability with a quadratic penalty on drift.",
        config={"beta": 0.05},
    )
)
register_loss(
    Loss(
        "gspo",
        "GSPO (token-level): every token carries the clipped sequence-level ratio.",
        config={"clip_low_threshold": 1 - 3e-4, "clip_high_threshold": 1 + 4e-4},
    )
)
register_loss(
    Loss(
        "stable_reinforce",
        "StableReinforce: REINFORCE weighted by the truncated ratio to the distribution the "
        "sampler drew from; needs provenance of sampling with record_stability_info.",
        config={"kl_coeff": 0.0},
        # Not offered by `rlv train` yet: its datums carry no provenance.
        policy=False,
    )
)
