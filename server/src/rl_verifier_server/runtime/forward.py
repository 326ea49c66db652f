"""Tinker's ``forward`` and ``forward_backward`` on one training adapter, in micro-batches."""

from __future__ import annotations

import numpy as np
import torch

from rl_verifier import UserError
from rl_verifier_server.runtime.batch_memory import BatchMemory, plan_batches
from rl_verifier_server.runtime.datums import PreparedDatum, prepare_datum
from rl_verifier_server.runtime.loaded_model import LoadedModel
from rl_verifier_server.runtime.logprobs import token_logprobs
from rl_verifier_server.runtime.loss_metrics import MetricTotals
from rl_verifier_server.runtime.losses import get_loss
from rl_verifier_server.runtime.training_adapters import AdapterTrainer
from rl_verifier_server.runtime.types import DatumIn, FwdBwdResult


def check_data(
    base: LoadedModel, data: list[DatumIn], loss_fn: str, config: dict[str, float] | None
) -> None:
    """What ``forward_backward`` checks before any compute, but the inputs derived from
    provenance: plain numpy on facts fixed at load, so any thread may ask before the call is
    queued."""
    loss = get_loss(loss_fn)
    loss.resolve_config(config)
    if not data:
        raise UserError("forward_backward needs at least one datum")
    for i, datum in enumerate(data):
        prepare_datum(i, datum, loss, base.vocab_size, base.max_context, derived=False)


def forward_backward(
    base: LoadedModel,
    trainer: AdapterTrainer,
    data: list[DatumIn],
    loss_fn: str,
    config: dict[str, float] | None,
    backward: bool,
    max_batch_tokens: int,
    budget_bytes: int,
) -> FwdBwdResult:
    """Loss, per-datum outputs and metrics; with ``backward``, gradients accumulate on the
    adapter until its optimizer step. Every datum is checked before any compute. Datums run
    in micro-batches whose estimated memory stays within ``budget_bytes``."""
    loss = get_loss(loss_fn)
    resolved = loss.resolve_config(config)
    if not data:
        raise UserError("forward_backward needs at least one datum")
    prepared = [
        prepare_datum(i, d, loss, base.vocab_size, base.max_context) for i, d in enumerate(data)
    ]
    base.adapters.activate(trainer.lora, trainable=backward)
    outputs: list[dict[str, np.ndarray]] = [{} for _ in prepared]
    totals = MetricTotals()
    memory = BatchMemory.of(base.model, backward)
    lengths = [d.length for d in prepared]
    plan = plan_batches(lengths, memory, budget_bytes, max_batch_tokens)
    for batch in ([prepared[i] for i in indices] for indices in plan):
        context = torch.enable_grad() if backward else torch.inference_mode()
        with context:
            inputs = [{k: v.to(base.device) for k, v in d.inputs.items()} for d in batch]
            lps = target_logprobs(base, batch)
            total: torch.Tensor | None = None
            for datum, lp, datum_inputs in zip(batch, lps, inputs, strict=True):
                terms = loss.fn(lp, datum_inputs, resolved)
                datum_loss = terms.elementwise.sum()
                total = datum_loss if total is None else total + datum_loss
                totals.add(terms, datum_inputs)
                outputs[datum.index] = {
                    "logprobs": _numpy(lp),
                    "elementwise_loss": _numpy(terms.elementwise),
                }
            if backward and total is not None:
                torch.autograd.backward(total)
    return FwdBwdResult(outputs, totals.metrics())


def target_logprobs(base: LoadedModel, batch: list[PreparedDatum]) -> list[torch.Tensor]:
    """Logprob of each datum's target tokens (right-padded batch; pads never attended)."""
    lengths = [d.length for d in batch]
    longest = max(lengths)
    ids = torch.zeros((len(batch), longest), dtype=torch.long)
    mask = torch.zeros((len(batch), longest), dtype=torch.long)
    for row, datum in enumerate(batch):
        ids[row, : datum.length] = datum.tokens
        mask[row, : datum.length] = 1
    ragged = min(lengths) != longest
    logits = base.model(
        input_ids=ids.to(base.device),
        attention_mask=mask.to(base.device) if ragged else None,
        use_cache=False,
    ).logits
    trailing = {tuple(datum.targets.shape[1:]) for datum in batch}
    if len(trailing) > 1:  # mixed 1-D and 2-D targets: one datum at a time
        return [
            token_logprobs(logits[row, : datum.length], datum.targets.to(base.device))
            for row, datum in enumerate(batch)
        ]
    # One gather over the whole batch, then cheap row slices of the [B, T] result:
    # slicing the [B, T, V] logits per datum makes each slice's backward write a full
    # [B, T, V] gradient, which is quadratic in the batch size.
    targets = torch.zeros((len(batch), longest, *trailing.pop()), dtype=torch.long)
    for row, datum in enumerate(batch):
        targets[row, : datum.length] = datum.targets
    logprobs = token_logprobs(logits, targets.to(base.device))
    return [logprobs[row, : datum.length] for row, datum in enumerate(batch)]


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    array: np.ndarray = tensor.detach().to("cpu", torch.float32).numpy()
    return array
