"""AdamW per training adapter: hyper-parameter checks, clipping, state (de)serialisation."""

from __future__ import annotations

import torch
from torch import nn

from rl_verifier import UserError
from rl_verifier_server.runtime.types import AdamParams

_STATE_FIELDS = ("step", "exp_avg", "exp_avg_sq")


def new_optimizer(params: dict[str, nn.Parameter]) -> torch.optim.AdamW:
    # Hyper-parameters are set on every step from the request.
    return torch.optim.AdamW(list(params.values()), lr=0.0)


def adamw_step(
    optimizer: torch.optim.AdamW, params: dict[str, nn.Parameter], adam: AdamParams
) -> tuple[float, bool]:
    """Clip (if asked), step, zero grads. Returns (pre-clip grad norm, whether any grads)."""
    grads = [p.grad for p in params.values() if p.grad is not None]
    if not grads:
        return 0.0, False
    norm = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])
    )
    if adam.grad_clip_norm > 0:
        scale = torch.clamp(adam.grad_clip_norm / (norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(scale.to(g.dtype))
    for group in optimizer.param_groups:
        group.update(
            lr=adam.learning_rate,
            betas=(adam.beta1, adam.beta2),
            eps=adam.eps,
            weight_decay=adam.weight_decay,
        )
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm), True


def optimizer_tensors(
    optimizer: torch.optim.AdamW, params: dict[str, nn.Parameter]
) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for key, param in params.items():
        state = optimizer.state.get(param)
        if not state:
            continue
        for name in _STATE_FIELDS:
            value = state[name]
            out[f"{key}::{name}"] = value if torch.is_tensor(value) else torch.tensor(value)
    return out


def restore_optimizer(
    optimizer: torch.optim.AdamW,
    params: dict[str, nn.Parameter],
    tensors: dict[str, torch.Tensor],
    origin: str,
) -> None:
    optimizer.state.clear()
    known = {f"{key}::{name}" for key in params for name in _STATE_FIELDS}
    extra = sorted(set(tensors) - known)
    if extra:
        raise UserError(f"{origin}: optimizer state for unknown parameters {extra[:3]}")
    for key, param in params.items():
        if f"{key}::step" not in tensors:
            continue
        state: dict[str, torch.Tensor] = {}
        for name in _STATE_FIELDS:
            value = tensors.get(f"{key}::{name}")
            if value is None:
                raise UserError(f"{origin}: optimizer state lacks '{key}::{name}'")
            if name == "step":
                state[name] = value.clone()  # torch keeps AdamW's step on the CPU
            else:
                if tuple(value.shape) != tuple(param.shape):
                    raise UserError(f"{origin}: optimizer state for '{key}' is misshaped")
                state[name] = value.to(device=param.device, dtype=param.dtype).clone()
        optimizer.state[param] = state
