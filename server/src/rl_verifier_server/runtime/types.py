"""Plain data passed between the HTTP layer and the runtime (no torch in here)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rl_verifier import UserError
from rl_verifier_server.base.fields import shown


class Cancelled(Exception):
    """A sample request stopped because its caller no longer wants the answer."""


@dataclass(frozen=True)
class LoraSpec:
    """What a training client asked for in ``create_lora_training_client``."""

    rank: int
    seed: int | None = None
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoraSpec:
        seed = data.get("seed")
        return cls(
            rank=int(data["rank"]),
            seed=None if seed is None else int(seed),
            train_mlp=bool(data.get("train_mlp", True)),
            train_attn=bool(data.get("train_attn", True)),
            train_unembed=bool(data.get("train_unembed", True)),
        )

    def validate(self) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise UserError(f"LoRA rank must be a positive integer, got {self.rank!r}")
        if not (self.train_mlp or self.train_attn or self.train_unembed):
            raise UserError("at least one of train_mlp, train_attn, train_unembed must be true")


@dataclass(frozen=True)
class AdapterLayout:
    """The shape of one LoRA adapter: what a checkpoint must match to load into it."""

    spec: LoraSpec
    alpha: float
    targets: tuple[str, ...]  # peft target_modules

    def matches(self, other: AdapterLayout) -> bool:
        """Same rank, alpha and targets: the weights of one load into the other."""
        mine = (self.spec.rank, self.alpha, self.targets)
        return mine == (other.spec.rank, other.alpha, other.targets)


@dataclass(frozen=True)
class AdamParams:
    """Tinker's ``AdamParams`` for one step, with its defaults."""

    learning_rate: float
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0  # 0: no clipping

    def check(self) -> None:
        """Every value finite and >= 0; the betas below 1."""
        for name, value in asdict(self).items():
            below_one = value < 1 if name.startswith("beta") else True  # betas lie in [0, 1)
            if not (math.isfinite(value) and value >= 0 and below_one):
                raise UserError(f"invalid AdamParams.{name}: {value}")


GREEDY_BELOW = 1e-5  # a temperature below this samples greedily (as vLLM does)
MAX_TEMPERATURE = 100.0  # the highest temperature a Tinker sample request may ask for


@dataclass(frozen=True)
class SamplingParams:
    """How the next token is chosen: temperature (0: greedy), top-p, top-k (-1 or 0: no
    limit). Build it with ``checked`` from a client's values."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1

    @classmethod
    def checked(
        cls,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        *,
        max_temperature: float = MAX_TEMPERATURE,
    ) -> SamplingParams:
        """The values in their safe ranges, or a UserError naming the one outside. Below
        ``GREEDY_BELOW`` a temperature is 0: the most likely token has all the mass, and
        dividing logits by such a number overflows."""
        if not (_is_number(temperature) and 0 <= temperature <= max_temperature):
            raise UserError(
                f"'temperature' must be between 0 and {max_temperature:g}, got {shown(temperature)}"
            )
        if not (_is_number(top_p) and 0 < top_p <= 1):
            raise UserError(f"'top_p' must be greater than 0 and at most 1, got {shown(top_p)}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < -1:
            raise UserError(
                f"'top_k' must be -1 (no limit) or a positive integer, got {shown(top_k)}"
            )
        greedy = temperature < GREEDY_BELOW
        return cls(0.0 if greedy else float(temperature), float(top_p), top_k)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass
class DatumIn:
    """One training example: the model input and its ``loss_fn_inputs``; ``derived`` holds
    inputs the server itself filled in (from provenance: see ``stability``), never the
    client's."""

    tokens: list[int] | np.ndarray
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    derived: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class FwdBwdResult:
    """Per-datum outputs (``logprobs``, ``elementwise_loss``) and ``name:reduction`` metrics."""

    outputs: list[dict[str, np.ndarray]]
    metrics: dict[str, float]


@dataclass
class SampledSequence:
    tokens: list[int]
    logprobs: list[float]  # under the model at temperature 1 (what forward() computes)
    stop_reason: str  # "stop" | "length"
    drawn_logprobs: list[float] = field(default_factory=list)  # under the distribution used
    # per token, the most likely tokens and their logprobs (temperature 1), when asked for
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)


@dataclass(frozen=True)
class AdapterInfo:
    """What ``read_adapter_info`` finds in an adapter folder written by the runtime."""

    kind: str  # "training" (save_state) or "sampler" (snapshot_sampler)
    base_model: str
    layout: AdapterLayout
    step: int
    has_optimizer: bool
