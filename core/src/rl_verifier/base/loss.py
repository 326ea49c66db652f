"""One training loss and the built-in ones: the records of the loss table.

``rl_verifier.discovery.losses`` looks names up in the table (``get_plugins().losses``); this module
only describes losses, so that registering the built-ins imports nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

CROSS_ENTROPY = "cross_entropy"
RL_INPUTS = ("target_tokens", "logprobs", "advantages")
CLIP_INPUTS = ("clip_low_threshold", "clip_high_threshold")
SEQUENCE_INPUTS = ("sequence_ratio_mask",)  # inputs of shape [N] that are not per-target


@dataclass(frozen=True)
class Loss:
    """One loss: its inputs, its settings and whether it trains a policy on rewards."""

    name: str
    description: str
    inputs: tuple[str, ...] = RL_INPUTS  # what a datum we build carries
    config: Mapping[str, float] = field(default_factory=dict)
    policy: bool = True  # an RL loss on advantages (``rlv train``'s ``loss``)
    optional: tuple[str, ...] = ()  # inputs ``rlv serve`` accepts but does not require
    multi_target: bool = False  # accepts target_tokens [N, K]
    derived: tuple[str, ...] = ()  # inputs ``rlv serve`` fills in from provenance
    # ``rlv serve``'s implementation, ``compute(lp, inputs, config)`` over torch tensors,
    # returning the per-position loss; None for the built-ins, which it runs by name.
    compute: Callable[..., Any] | None = None

    @property
    def required(self) -> tuple[str, ...]:
        """The inputs ``rlv serve`` refuses a datum without."""
        return tuple(name for name in self.inputs if name not in self.optional)


BUILTIN_LOSSES = (
    Loss(
        CROSS_ENTROPY,
        "Supervised: negative log-likelihood of the target tokens, weighted by 'weights'.",
        inputs=("target_tokens", "weights"),
        policy=False,
        optional=("weights",),
        multi_target=True,
    ),
    Loss(
        "importance_sampling",
        "Policy gradient with the ratio of the learner's to the sampler's probability.",
    ),
    Loss(
        "ppo",
        "PPO's clipped surrogate objective on the probability ratio.",
        config={"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
        optional=CLIP_INPUTS,
    ),
    Loss(
        "cispo",
        "CISPO: the clipped, detached ratio weights the log-probability gradient.",
        config={"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
        optional=CLIP_INPUTS,
    ),
    Loss(
        "dro",
        "DRO: advantage-weighted log-probability with a quadratic penalty on drift.",
        config={"beta": 0.05},
    ),
    Loss(
        "gspo",
        "GSPO (token-level): every token carries the clipped sequence-level ratio.",
        config={"clip_low_threshold": 1 - 3e-4, "clip_high_threshold": 1 + 4e-4},
        optional=(*CLIP_INPUTS, *SEQUENCE_INPUTS),
    ),
    Loss(
        "stable_reinforce",
        "StableReinforce: REINFORCE weighted by the truncated ratio to the distribution the "
        "sampler drew from; needs provenance of sampling with record_stability_info.",
        config={"kl_coeff": 0.0},
        # Not offered by `rlv train` yet: its datums carry no provenance.
        policy=False,
        optional=("logprobs",),
        derived=("sampled", "drawn_logprobs"),
    ),
)
