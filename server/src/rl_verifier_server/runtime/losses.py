"""Tinker's built-in losses, and the checks on the ``loss_fn_inputs`` they read.

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
==================== ===================================================== ==================

The clip thresholds are absolute ratio bounds. ppo and cispo also accept per-datum
``clip_low_threshold`` / ``clip_high_threshold`` inputs (shape [N] or [1]) that override the
config. cross_entropy also takes 2-D ``target_tokens`` [N, K] with ``weights`` [N, K]
(distillation over K candidates per position); its ``logprobs`` output is then [N, K].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from rl_verifier.errors import UserError
from rl_verifier_server.runtime.types import DatumIn


@dataclass
class LossTerms:
    """What a loss returns for one datum."""

    elementwise: Tensor  # [N] per-position loss, connected to the graph
    ratio: Tensor | None = None  # [N] importance ratio (detached), RL losses only
    clipped: Tensor | None = None  # [N] bool, ratio outside the clip range (ppo, cispo)


LossFn = Callable[[Tensor, Mapping[str, Tensor], Mapping[str, float]], LossTerms]


@dataclass(frozen=True)
class LossDef:
    name: str
    fn: LossFn
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    config: Mapping[str, float] = field(default_factory=dict)
    multi_target: bool = False  # accepts target_tokens [N, K]

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


@dataclass
class PreparedDatum:
    """A validated datum: torch tensors on CPU, ready to move to the model's device."""

    index: int
    tokens: Tensor  # int64 [N]
    targets: Tensor  # int64 [N] or [N, K]
    inputs: dict[str, Tensor]  # float32, every other loss_fn_input

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])


# Losses ----------------------------------------------------------------------------------


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


_RL_INPUTS = ("target_tokens", "logprobs", "advantages")
_CLIP_INPUTS = ("clip_low_threshold", "clip_high_threshold")

LOSSES: dict[str, LossDef] = {
    loss.name: loss
    for loss in (
        LossDef(
            "cross_entropy", _cross_entropy, ("target_tokens",), ("weights",), multi_target=True
        ),
        LossDef("importance_sampling", _importance_sampling, _RL_INPUTS),
        LossDef(
            "ppo",
            _ppo,
            _RL_INPUTS,
            _CLIP_INPUTS,
            {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
        ),
        LossDef(
            "cispo",
            _cispo,
            _RL_INPUTS,
            _CLIP_INPUTS,
            {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
        ),
        LossDef("dro", _dro, _RL_INPUTS, (), {"beta": 0.05}),
    )
}


def get_loss(name: str) -> LossDef:
    loss = LOSSES.get(name)
    if loss is None:
        raise UserError(
            f"unknown loss function '{name}'; this server supports: {', '.join(LOSSES)}"
        )
    return loss


# Input checks ----------------------------------------------------------------------------


def check_tokens(tokens: object, vocab_size: int, what: str) -> Tensor:
    """``tokens`` as an int64 tensor, or a UserError naming ``what``."""
    try:
        array = np.asarray(tokens)
    except (TypeError, ValueError) as error:
        raise UserError(f"{what} must be a list of token ids ({error})") from None
    if array.ndim != 1:
        raise UserError(f"{what} must be a flat list of token ids, got shape {array.shape}")
    if array.size == 0:
        raise UserError(f"{what} is empty")
    array = _as_int(array, what)
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise UserError(
            f"{what} contains token id {bad}, outside this model's vocabulary [0, {vocab_size})"
        )
    return torch.from_numpy(array)


def _as_int(array: np.ndarray, what: str) -> np.ndarray:
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        return array.astype(np.int64)
    raise UserError(f"{what} must hold integer token ids, got dtype {array.dtype}")


def prepare_datum(
    index: int, datum: DatumIn, loss: LossDef, vocab_size: int, max_context: int
) -> PreparedDatum:
    where = f"datum {index}"
    tokens = check_tokens(datum.tokens, vocab_size, f"{where}: model_input tokens")
    n = int(tokens.shape[0])
    if n > max_context:
        raise UserError(f"{where}: {n} tokens exceed this model's context length of {max_context}")
    given = dict(datum.inputs)
    allowed = (*loss.required, *loss.optional)
    for key in given:
        if key not in allowed:
            raise UserError(
                f"{where}: loss_fn_inputs['{key}'] is not used by loss '{loss.name}' "
                f"(it takes: {', '.join(allowed)})"
            )
    for key in loss.required:
        if key not in given:
            raise UserError(
                f"{where}: loss '{loss.name}' needs loss_fn_inputs['{key}'] "
                f"(shape [N] = [{n}], one value per model-input token)"
            )
    targets = _check_targets(np.asarray(given.pop("target_tokens")), loss, n, vocab_size, where)
    inputs: dict[str, Tensor] = {}
    for key, value in given.items():
        inputs[key] = _check_floats(np.asarray(value), key, tuple(targets.shape), where)
    return PreparedDatum(index, tokens, targets, inputs)


def _check_targets(array: np.ndarray, loss: LossDef, n: int, vocab_size: int, where: str) -> Tensor:
    key = f"{where}: loss_fn_inputs['target_tokens']"
    shape_ok = array.ndim == 1 or (loss.multi_target and array.ndim == 2 and array.shape[1] > 0)
    if not shape_ok or array.shape[0] != n:
        expected = f"[N] = [{n}]" + (" or [N, K]" if loss.multi_target else "")
        raise UserError(
            f"{key} has shape {list(array.shape)}; expected {expected} to match the {n} "
            "model-input tokens"
        )
    array = _as_int(array, key)
    if array.min() < 0 or array.max() >= vocab_size:
        bad = int(array.min()) if array.min() < 0 else int(array.max())
        raise UserError(
            f"{key} contains token id {bad}, outside this model's vocabulary [0, {vocab_size})"
        )
    return torch.from_numpy(np.ascontiguousarray(array))


def _check_floats(array: np.ndarray, key: str, shape: tuple[int, ...], where: str) -> Tensor:
    name = f"{where}: loss_fn_inputs['{key}']"
    if array.dtype.kind not in "fiub":
        raise UserError(f"{name} must be numeric, got dtype {array.dtype}")
    if key in _CLIP_INPUTS:
        if array.size == 1:
            array = np.full(shape[:1], float(array.reshape(())), np.float32)
        shape = shape[:1]
    if tuple(array.shape) != shape:
        raise UserError(
            f"{name} has shape {list(array.shape)}; expected {list(shape)} "
            "(the shape of target_tokens)"
        )
    values = array.astype(np.float32)
    if not np.all(np.isfinite(values)):
        raise UserError(f"{name} contains NaN or infinite values")
    return torch.from_numpy(np.ascontiguousarray(values))


# Metrics ---------------------------------------------------------------------------------


@dataclass
class MetricTotals:
    """Folds LossTerms into ``name:reduction`` metrics over one forward_backward call.

    ``importance_ratio:{mean,min,max}`` and ``clip_fraction:mean`` are taken over positions with
    a non-zero advantage (prompt positions usually carry advantage 0 and a placeholder
    logprob); when a call has none, over all positions.
    """

    loss_sum: float = 0.0
    ratios_active: list[Tensor] = field(default_factory=list)
    ratios_all: list[Tensor] = field(default_factory=list)
    clipped_active: list[Tensor] = field(default_factory=list)
    clipped_all: list[Tensor] = field(default_factory=list)

    def add(self, terms: LossTerms, inputs: Mapping[str, Tensor]) -> None:
        self.loss_sum += float(terms.elementwise.detach().sum())
        if terms.ratio is None:
            return
        active = inputs["advantages"] != 0
        self.ratios_all.append(terms.ratio)
        self.ratios_active.append(terms.ratio[active])
        if terms.clipped is not None:
            self.clipped_all.append(terms.clipped)
            self.clipped_active.append(terms.clipped[active])

    def metrics(self) -> dict[str, float]:
        out = {"loss:sum": self.loss_sum}
        if self.ratios_all:
            active = torch.cat(self.ratios_active)
            ratios = active if active.numel() else torch.cat(self.ratios_all)
            out["importance_ratio:mean"] = float(ratios.double().mean())
            out["importance_ratio:min"] = float(ratios.min())
            out["importance_ratio:max"] = float(ratios.max())
        if self.clipped_all:
            active = torch.cat(self.clipped_active)
            clipped = active if active.numel() else torch.cat(self.clipped_all)
            out["clip_fraction:mean"] = float(clipped.double().mean())
        return out
