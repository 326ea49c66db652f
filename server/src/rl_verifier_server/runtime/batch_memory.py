"""How many bytes a forward(_backward) micro-batch needs, estimated from the model's config,
and the split of a request's datums into micro-batches that stay under a budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from rl_verifier_server.base.limits import ServerLimits

DEFAULT_BATCH_MEMORY_GB = ServerLimits().batch_memory_gb  # rlv serve --batch-memory-gb
# Per layer and padded token, in elements, the activations autograd keeps for backward when
# LoRA trains every layer (norms, projections' inputs and outputs, rotary, MLP), with room
# for the allocator's fragmentation across micro-batches: calibrated on SmolLM2-135M on CPU,
# where a steady-state step measured 3.16 MB of peak RSS per token of 600-token datums
# (benchmarks/train_memory.py) and this estimates 3.45 MB.
KEPT_PER_HIDDEN = 16
KEPT_PER_INTERMEDIATE = 6
# Logits, their gradient and one transient of the same size, per vocabulary entry.
LOGIT_COPIES_BACKWARD = 3
LOGIT_COPIES_FORWARD = 2


@dataclass(frozen=True)
class BatchMemory:
    """Estimated bytes of one micro-batch: ``per_token`` per padded token and ``per_pair``
    per pair of positions in a row (attention scores, T^2 per row)."""

    per_token: int
    per_pair: int

    @classmethod
    def of(cls, model: Any, backward: bool) -> BatchMemory:
        """From a transformers model's config and dtype; ``backward`` keeps every layer's
        activations, a plain forward only one layer's at a time."""
        config = model.config
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        layers = int(getattr(text, "num_hidden_layers", 1))
        hidden = int(text.hidden_size)
        intermediate = int(getattr(text, "intermediate_size", None) or 4 * hidden)
        heads = int(getattr(text, "num_attention_heads", 1))
        vocab = int(text.vocab_size)
        element = torch.finfo(next(model.parameters()).dtype).bits // 8
        logit_element = max(element, 4)  # logprobs are computed in float32
        per_layer = KEPT_PER_HIDDEN * hidden + KEPT_PER_INTERMEDIATE * intermediate
        if backward:
            per_token = layers * per_layer * element
            per_token += LOGIT_COPIES_BACKWARD * vocab * logit_element
            per_pair = layers * heads * element
        else:
            per_token = per_layer * element + LOGIT_COPIES_FORWARD * vocab * logit_element
            per_pair = heads * element
        return cls(per_token, per_pair)

    def batch_bytes(self, rows: int, longest: int) -> int:
        """Estimate for ``rows`` datums right-padded to ``longest`` tokens."""
        return rows * longest * (self.per_token + longest * self.per_pair)


def plan_batches(
    lengths: list[int], memory: BatchMemory, budget_bytes: int, max_tokens: int
) -> list[list[int]]:
    """Consecutive datum indices grouped so that each padded micro-batch's estimate stays
    within ``budget_bytes`` and holds at most ``max_tokens`` padded tokens; a datum over
    either bound on its own still runs, alone."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index, length in enumerate(lengths):
        grown = max(longest, length)
        rows = len(current) + 1
        if current and (
            grown * rows > max_tokens or memory.batch_bytes(rows, grown) > budget_bytes
        ):
            batches.append(current)
            current, grown = [], length
        current.append(index)
        longest = grown
    if current:
        batches.append(current)
    return batches


def peak_estimate(
    lengths: list[int], memory: BatchMemory, budget_bytes: int, max_tokens: int
) -> int:
    """The largest micro-batch's estimate under ``plan_batches``."""
    return max(
        memory.batch_bytes(len(batch), max(lengths[i] for i in batch))
        for batch in plan_batches(lengths, memory, budget_bytes, max_tokens)
    )
