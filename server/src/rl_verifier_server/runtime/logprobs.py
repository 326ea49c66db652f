"""The one function that turns logits into reported logprobs."""

from __future__ import annotations

import torch
from torch import Tensor

CHUNK_POSITIONS = 256  # rows of logits turned into float32 at a time


def token_logprobs(logits: Tensor, targets: Tensor) -> Tensor:
    """``log_softmax(logits)[targets]`` in float32; targets [...] or [..., K].

    Sampling, forward and prompt logprobs all go through here, so the three agree. Computed
    as ``logit[target] - logsumexp(logits)`` over chunks of positions, so no second
    [..., V] tensor is kept for backward (log_softmax keeps its whole output) and the float32
    copy of bf16 logits exists one chunk at a time.
    """
    vocab = logits.shape[-1]
    several = targets.dim() == logits.dim()
    flat_logits = logits.reshape(-1, vocab)
    flat_targets = targets.reshape(-1, targets.shape[-1]) if several else targets.reshape(-1, 1)
    pieces = []
    for chunk, index in zip(
        flat_logits.split(CHUNK_POSITIONS), flat_targets.split(CHUNK_POSITIONS), strict=True
    ):
        chunk = chunk.float()
        pieces.append(chunk.gather(-1, index) - torch.logsumexp(chunk, dim=-1, keepdim=True))
    return torch.cat(pieces).reshape(targets.shape)
