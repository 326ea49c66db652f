"""Tinker's built-in losses: name -> implementation (``LOSSES``).

Every loss is a SUM over tokens and datums (never a mean). ``lp`` is the current logprob
of each target token, ``lp_old`` is ``loss_fn_inputs["logprobs"]`` (the sampler's),
``A`` is ``loss_fn_inputs["advantages"]`` and ``r = exp(lp - lp_old)``:

==================== ===================================================== ==================
loss                 per-token loss                                         loss_fn_config
==================== ===================================================== ==================
cross_entropy        ``-lp * weights`` (weights default to 1; any real)     none
importance_sampling  ``-r * A``                                             none
ppo                  ``-min(r * A, clip(r, lo, hi) * A)``                   clip_low_threshold
                                                                            (0.8),
                                                                            clip_high_threshold
                                                                            (1.2)
cispo                ``-stopgrad(clip(r, lo, hi)) * lp * A``                clip_low_threshold
                                                                            (0.0),
                                                                            clip_high_threshold
                                                                            (4.0)
dro                  ``-(lp * A - beta / 2 * (lp - lp_old) ** 2)``          beta (0.05)
gspo                 ``-min(s * A, clip(s, lo, hi) * A)``, where           clip_low_threshold
                     ``s = sg(S) * exp(lp - sg(lp))`` and ``S`` is the      (0.9997),
                     sequence ratio: ``exp(mean(lp - lp_old))`` over the    clip_high_threshold
                     positions ``sequence_ratio_mask`` marks                (1.0004)
stable_reinforce     ``-sg(min(r_q, 1)) * lp * A + kl * (r_q - 1 -          kl_coeff (0.0)
                     log r_q)`` on sampled positions, 0 on the others;
                     ``r_q = exp(lp - lp_q)`` with ``lp_q`` the token's
                     logprob under the distribution the sampler drew it
                     from, recorded at sampling time
==================== ===================================================== ==================

The clip thresholds are absolute ratio bounds. ppo, cispo and gspo also accept per-datum
``clip_low_threshold`` / ``clip_high_threshold`` inputs (shape [N] or [1]) that override the
config. cross_entropy also takes 2-D ``target_tokens`` [N, K] with ``weights`` [N, K]
(distillation over K candidates per position); its ``logprobs`` output is then [N, K].

gspo is Tinker's token-level GSPO: each token carries the sequence ratio's value with its
own logprob's gradient. Without ``sequence_ratio_mask`` the sequence ratio is taken over the
positions with a non-zero advantage (the sampled tokens of an RL datum); its clip range is
the GSPO paper's (1 - 3e-4, 1 + 4e-4).

stable_reinforce needs provenance (``Datum.with_provenance``) naming sequences sampled with
``record_stability_info=True`` in the same session; the server resolves it into two
``derived`` inputs before the loss runs (``stability``): ``sampled`` (1 where the target
token is a sampled token) and ``drawn_logprobs`` (``lp_q``). A non-zero advantage on a
position that is not a sampled token is refused. The truncated, detached ratio keeps the
update bounded however stale the samples are; ``kl_coeff`` adds an estimate of
KL(sampler || learner) on the sampled tokens (the ``k3`` estimator).

The table is core's (``rl_verifier.discovery.losses``, ``get_plugins().losses``): names, inputs and
``loss_fn_config`` defaults live there once. This module adds only each built-in's
function (``IMPLEMENTATIONS``); a loss a plugin registers brings its own ``compute``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

import torch
from torch import Tensor

from rl_verifier import Loss, UserError
from rl_verifier.cli_support import CLIP_INPUTS, RL_INPUTS, SEQUENCE_INPUTS, loss_table
from rl_verifier.internal import unknown_message


@dataclass
class LossTerms:
    """What a loss returns for one datum."""

    elementwise: Tensor  # [N] per-position loss, connected to the graph
    ratio: Tensor | None = None  # [N] importance ratio (detached), RL losses only
    clipped: Tensor | None = None  # [N] bool, ratio outside the clip range (ppo, cispo)


LossFn = Callable[[Tensor, Mapping[str, Tensor], Mapping[str, float]], LossTerms]


@dataclass(frozen=True)
class LossDef:
    """How this server runs one loss: its function, the ``loss_fn_inputs`` it requires and
    accepts, and its ``loss_fn_config`` keys with their defaults."""

    name: str
    fn: LossFn
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    config: Mapping[str, float] = field(default_factory=dict)
    multi_target: bool = False  # accepts target_tokens [N, K]
    derived: tuple[str, ...] = ()  # inputs the server fills in from provenance

    def resolve_config(self, given: Mapping[str, object] | None) -> dict[str, float]:
        resolved = dict(self.config)
        for key, value in (given or {}).items():
            if key not in self.config:
                known = ", ".join(sorted(self.config)) or "none"
                raise UserError(
                    f"loss_fn_config key '{key}' is not used by loss '{self.name}' "
                    f"(it accepts: {known})"
                )
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UserError(f"loss_fn_config['{key}'] must be a number, got {value!r}")
            if not math.isfinite(value):
                raise UserError(f"loss_fn_config['{key}'] must be finite, got {value}")
            resolved[key] = float(value)
        if "clip_low_threshold" in resolved:
            low, high = resolved["clip_low_threshold"], resolved["clip_high_threshold"]
            if low > high:
                raise UserError(
                    f"clip_low_threshold ({low}) must not exceed clip_high_threshold ({high})"
                )
        return resolved


def _cross_entropy(lp: Tensor, inputs: Mapping[str, Tensor], _: Mapping[str, float]) -> LossTerms:
    weights = inputs.get("weights")
    loss = -lp if weights is None else -(lp * weights)
    if loss.dim() == 2:
        loss = loss.sum(dim=-1)
    return LossTerms(loss)


def _ratio(lp: Tensor, inputs: Mapping[str, Tensor]) -> Tensor:
    return torch.exp(lp - inputs["logprobs"])


def _clip_bounds(inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> tuple[Tensor, ...]:
    low = inputs.get("clip_low_threshold")
    high = inputs.get("clip_high_threshold")
    like = inputs["advantages"]
    return (
        low if low is not None else torch.full_like(like, config["clip_low_threshold"]),
        high if high is not None else torch.full_like(like, config["clip_high_threshold"]),
    )


def _importance_sampling(
    lp: Tensor, inputs: Mapping[str, Tensor], _: Mapping[str, float]
) -> LossTerms:
    ratio = _ratio(lp, inputs)
    return LossTerms(-(ratio * inputs["advantages"]), ratio=ratio.detach())


def _ppo(lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> LossTerms:
    ratio = _ratio(lp, inputs)
    adv = inputs["advantages"]
    low, high = _clip_bounds(inputs, config)
    clipped_ratio = torch.minimum(torch.maximum(ratio, low), high)
    loss = -torch.minimum(ratio * adv, clipped_ratio * adv)
    r = ratio.detach()
    return LossTerms(loss, ratio=r, clipped=(r < low) | (r > high))


def _cispo(lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> LossTerms:
    r = _ratio(lp, inputs).detach()
    low, high = _clip_bounds(inputs, config)
    clipped_ratio = torch.minimum(torch.maximum(r, low), high)
    loss = -(clipped_ratio * lp * inputs["advantages"])
    return LossTerms(loss, ratio=r, clipped=(r < low) | (r > high))


def _dro(lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> LossTerms:
    old = inputs["logprobs"]
    adv = inputs["advantages"]
    loss = -(lp * adv - 0.5 * config["beta"] * (lp - old) ** 2)
    return LossTerms(loss, ratio=torch.exp(lp.detach() - old))


def _gspo(lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> LossTerms:
    adv = inputs["advantages"]
    mask = inputs.get("sequence_ratio_mask")
    in_ratio = (adv if mask is None else mask) != 0
    token_log_ratio = lp.detach() - inputs["logprobs"]
    log_ratio = token_log_ratio[in_ratio].mean() if bool(in_ratio.any()) else lp.new_zeros(())
    ratio = torch.exp(log_ratio + lp - lp.detach())
    low, high = _clip_bounds(inputs, config)
    clipped_ratio = torch.minimum(torch.maximum(ratio, low), high)
    loss = -torch.minimum(ratio * adv, clipped_ratio * adv)
    r = ratio.detach()
    return LossTerms(loss, ratio=r, clipped=(r < low) | (r > high))


def _stable_reinforce(
    lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]
) -> LossTerms:
    sampled = inputs["sampled"]
    log_ratio = lp - inputs["drawn_logprobs"]
    ratio = torch.exp(log_ratio)
    weight = torch.clamp(ratio.detach(), max=1.0)
    kl = ratio - 1 - log_ratio
    loss = sampled * (-(weight * lp * inputs["advantages"]) + config["kl_coeff"] * kl)
    return LossTerms(loss, ratio=ratio.detach())


__all__ = ["CLIP_INPUTS", "RL_INPUTS", "SEQUENCE_INPUTS", "LossDef", "get_loss", "losses"]

IMPLEMENTATIONS: dict[str, LossFn] = {
    "cross_entropy": _cross_entropy,
    "importance_sampling": _importance_sampling,
    "ppo": _ppo,
    "cispo": _cispo,
    "dro": _dro,
    "gspo": _gspo,
    "stable_reinforce": _stable_reinforce,
}


def _plugin_fn(compute: Callable[..., object]) -> LossFn:
    """A plugin's ``compute``, which may return the per-position loss tensor alone."""

    def fn(lp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> LossTerms:
        out = compute(lp, inputs, config)
        return out if isinstance(out, LossTerms) else LossTerms(elementwise=cast(Tensor, out))

    return fn


def served(loss: Loss) -> LossDef | None:
    """How this server runs ``loss`` (None: it has no implementation here)."""
    fn = _plugin_fn(loss.compute) if loss.compute is not None else IMPLEMENTATIONS.get(loss.name)
    if fn is None:
        return None
    return LossDef(
        loss.name,
        fn,
        loss.required,
        loss.optional,
        loss.config,
        multi_target=loss.multi_target,
        derived=loss.derived,
    )


def losses() -> dict[str, LossDef]:
    """Every registered loss this server can run, by name."""
    table = {loss.name: served(loss) for loss in loss_table().values()}
    return {name: loss for name, loss in table.items() if loss is not None}


def __getattr__(name: str) -> object:
    if name == "LOSSES":  # the name this table had before core's registry held it
        return losses()
    raise AttributeError(name)


# The SDK's LossFnType also names "custom": a loss traced on the client and uploaded with
# create_custom_loss. This server's client/config turns that off, so the SDK runs
# forward_backward_custom on the client over cross_entropy and never sends "custom".
CLIENT_SIDE = {"custom": "forward_backward_custom runs on the client with this server"}


def get_loss(name: str) -> LossDef:
    if name in CLIENT_SIDE:
        raise UserError(f"loss function '{name}' is not run by this server: {CLIENT_SIDE[name]}")
    table = losses()
    if name not in table:
        raise UserError(unknown_message("loss function", name, list(table)))
    return table[name]
