"""Pack an episode's token segments into one training datum.

A sequence is a list of segments: prompt tokens (not sampled), then alternating sampled model
turns and environment-inserted tokens (tool output, the next generation prompt). Following
Tinker's shift convention, position ``i`` of the model input predicts token ``i + 1`` of the
full sequence, so a sampled token at full-sequence index ``j > 0`` is target index ``j - 1``.
The first token of a sequence is never a target (a sampled segment may not start a sequence).
Only sampled targets carry a logprob, an advantage and mask 1; every other target is masked
with zeros.

Nothing here imports tinker or torch except :func:`to_datum`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rl_verifier.discovery.losses import get_loss

if TYPE_CHECKING:
    import tinker


@dataclass
class Segment:
    """A run of tokens; sampled runs carry the sampler's logprob of each token."""

    tokens: list[int]
    sampled: bool
    logprobs: list[float] | None = None


@dataclass
class PackedDatum:
    """One sequence, already shifted: every list has ``len(tokens) - 1`` entries."""

    input_tokens: list[int]
    target_tokens: list[int]
    logprobs: list[float]
    advantages: list[float]
    mask: list[float]

    @property
    def num_sampled(self) -> int:
        """How many targets are sampled tokens (the ones that get a loss)."""
        return sum(1 for m in self.mask if m)


def pack(segments: list[Segment], advantage: float, max_length: int | None = None) -> PackedDatum:
    """Concatenate ``segments`` and shift them into inputs and targets.

    ``advantage`` goes on every sampled target. Raises ValueError for a sampled segment
    without logprobs or with a different number of logprobs than tokens, logprobs on a
    segment that is not sampled, a sampled token at the start of the sequence, a sequence
    shorter than two tokens, a non-finite advantage, or more than ``max_length`` tokens.
    """
    if not math.isfinite(advantage):
        raise ValueError(f"advantage must be finite, got {advantage}")
    tokens: list[int] = []
    sampled_logprobs: dict[int, float] = {}  # full-sequence index -> logprob
    for index, segment in enumerate(segments):
        if segment.sampled:
            if segment.logprobs is None:
                raise ValueError(f"segment {index} is sampled but has no logprobs")
            if len(segment.logprobs) != len(segment.tokens):
                raise ValueError(
                    f"segment {index} has {len(segment.tokens)} tokens but "
                    f"{len(segment.logprobs)} logprobs"
                )
            if segment.tokens and not tokens:
                raise ValueError("a sampled segment cannot start the sequence (no prompt)")
            for offset, logprob in enumerate(segment.logprobs):
                sampled_logprobs[len(tokens) + offset] = float(logprob)
        elif segment.logprobs is not None:
            raise ValueError(f"segment {index} is not sampled but has logprobs")
        tokens.extend(segment.tokens)
    if len(tokens) < 2:
        raise ValueError(f"a datum needs at least 2 tokens, got {len(tokens)}")
    if max_length is not None and len(tokens) > max_length:
        raise ValueError(f"sequence of {len(tokens)} tokens exceeds max_length {max_length}")
    n = len(tokens) - 1
    logprobs = [0.0] * n
    advantages = [0.0] * n
    mask = [0.0] * n
    for j, logprob in sampled_logprobs.items():
        logprobs[j - 1] = logprob
        advantages[j - 1] = float(advantage)
        mask[j - 1] = 1.0
    return PackedDatum(
        input_tokens=tokens[:-1],
        target_tokens=tokens[1:],
        logprobs=logprobs,
        advantages=advantages,
        mask=mask,
    )


def supervised(prompt_tokens: list[int], completion_tokens: list[int]) -> PackedDatum:
    """A cross-entropy datum: mask 1 on completion targets, logprobs and advantages 0."""
    return pack(
        [
            Segment(list(prompt_tokens), sampled=False),
            Segment(list(completion_tokens), sampled=True, logprobs=[0.0] * len(completion_tokens)),
        ],
        advantage=0.0,
    )


def to_datum(packed: PackedDatum, loss_fn: str = "importance_sampling") -> tinker.types.Datum:
    """Build a ``tinker.types.Datum`` for ``loss_fn``.

    The datum carries the inputs ``rl_verifier.discovery.losses`` lists for the loss:
    ``target_tokens`` and ``weights`` (the mask) for ``cross_entropy``; ``target_tokens``,
    ``logprobs`` and ``advantages`` for the policy losses. An unknown loss raises
    ``ValueError``.
    """
    from tinker import types

    n = len(packed.target_tokens)
    lengths = {len(packed.input_tokens), len(packed.logprobs), len(packed.advantages)}
    if lengths | {len(packed.mask)} != {n}:
        raise ValueError("packed datum lists differ in length")

    def floats(values: list[float]) -> types.TensorData:
        return types.TensorData(data=list(values), dtype="float32", shape=[n])

    values = {
        "target_tokens": types.TensorData(
            data=list(packed.target_tokens), dtype="int64", shape=[n]
        ),
        "weights": floats(packed.mask),
        "logprobs": floats(packed.logprobs),
        "advantages": floats(packed.advantages),
    }
    inputs = {name: values[name] for name in get_loss(loss_fn).inputs}
    return types.Datum(
        model_input=types.ModelInput.from_ints(list(packed.input_tokens)),
        loss_fn_inputs=inputs,
    )
