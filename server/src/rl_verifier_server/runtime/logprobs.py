"""The one function that turns logits into reported logprobs."""

from __future__ import annotations

import torch
from torch import Tensor


def token_logprobs(logits: Tensor, targets: Tensor) -> Tensor:
    """``log_softmax(logits)[targets]`` in float32; targets [...] or [..., K].

    Sampling, forward and prompt logprobs all go through here, so the three agree.
    """
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    if targets.dim() == logits.dim():
        return logprobs.gather(-1, targets)
    return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
