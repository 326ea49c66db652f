"""forward_backward splits datums into micro-batches by estimated memory, and the split and
the chunked logprobs change nothing a client sees: loss, logprobs and gradients."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from rlv_numerics import assert_float32_close, backward_terms, float32_tolerance
from transformers import LlamaConfig, LlamaForCausalLM

from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.models.tiny_model import ensure_tiny_model
from rl_verifier_server.runtime import DatumIn, LoraSpec, ModelHost, forward
from rl_verifier_server.runtime.batch_memory import BatchMemory, plan_batches
from rl_verifier_server.runtime.logprobs import CHUNK_POSITIONS, token_logprobs
from rl_verifier_server.state.service import Service

VOCAB = 300
SPEC = LoraSpec(rank=4, seed=0)


def random_llama() -> ModelHost:
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.1,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    return ModelHost(model, SimpleNamespace(eos_token_id=0), "random-llama")


def rl_data(lengths: list[int], vocab: int, seed: int = 0) -> list[DatumIn]:
    rng = np.random.default_rng(seed)
    data = []
    for n in lengths:
        seq = rng.integers(0, vocab, size=n + 1)
        inputs = {
            "target_tokens": seq[1:],
            "logprobs": rng.normal(-3.0, 0.5, size=n).astype(np.float32),
            "advantages": rng.normal(size=n).astype(np.float32),
        }
        data.append(DatumIn([int(t) for t in seq[:-1]], inputs))
    return data


def run(host: ModelHost, data: list[DatumIn]) -> tuple[list[dict[str, np.ndarray]], dict[str, Any]]:
    """Outputs and LoRA gradients of one forward_backward on a fresh adapter."""
    host.trainers.create("a", SPEC)
    with torch.random.fork_rng(devices=[]):
        for param in host.trainers.parameters("a").values():  # B != 0: gradients reach A
            torch.nn.init.normal_(param, std=0.05)
    result = host.forward_backward("a", data, "importance_sampling", None, backward=True)
    grads = {k: p.grad.clone() for k, p in host.trainers.parameters("a").items()}
    host.trainers.drop("a")
    return result.outputs, grads


def assert_same(
    host: ModelHost,
    data: list[DatumIn],
    a: tuple[list[dict[str, np.ndarray]], dict[str, Any]],
    b: tuple[list[dict[str, np.ndarray]], dict[str, Any]],
) -> None:
    """The same results up to float32 reordering: other micro-batches (other padding)
    and another log-softmax sum the same terms in other orders. Bugs move far more: one
    datum of twelve lost moves the gradients by 13% of their scale, attended pads move
    logprobs by 0.9 (on tiny Llamas like these)."""
    vocab = host.base.vocab_size
    for out_a, out_b in zip(a[0], b[0], strict=True):
        assert_float32_close(out_b["logprobs"], out_a["logprobs"], terms=vocab)
        # importance_sampling's -exp(lp - old) * A moves by |loss| times its lp's error
        lp_error = float32_tolerance(out_a["logprobs"], vocab)
        loss_a, loss_b = out_a["elementwise_loss"], out_b["elementwise_loss"]
        np.testing.assert_allclose(loss_b, loss_a, rtol=lp_error, atol=float32_tolerance(loss_a, 4))
    assert a[1].keys() == b[1].keys()
    lengths = [len(d.tokens) for d in data]
    terms = backward_terms(sum(lengths), max(lengths), host.base.model.config)
    for key in a[1]:
        assert_float32_close(b[1][key].numpy(), a[1][key].numpy(), terms=terms, err_msg=key)


def counting_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of each micro-batch forward_backward runs."""
    rows: list[int] = []
    original: Callable[..., list[torch.Tensor]] = forward.target_logprobs

    def counted(base: Any, batch: list[Any]) -> list[torch.Tensor]:
        rows.append(len(batch))
        return original(base, batch)

    monkeypatch.setattr(forward, "target_logprobs", counted)
    return rows


def test_a_tiny_budget_splits_the_batch_and_changes_no_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = random_llama()
    lengths = [120, 90, 200, 150, 60, 180, 100, 130, 170, 80, 140, 110]
    data = rl_data(lengths, VOCAB)
    whole = run(host, data)
    memory = BatchMemory.of(host.base.model, backward=True)
    host.batch_memory_bytes = memory.batch_bytes(2, 200)  # about two datums a micro-batch
    rows = counting_calls(monkeypatch)
    split = run(host, data)
    planned = plan_batches(lengths, memory, host.batch_memory_bytes, host.max_batch_tokens)
    assert rows == [len(batch) for batch in planned]
    assert 5 <= len(rows) <= 8 and sum(rows) == len(lengths)
    for batch in planned:
        estimate = memory.batch_bytes(len(batch), max(lengths[i] for i in batch))
        assert estimate <= host.batch_memory_bytes
    assert_same(host, data, whole, split)


def test_a_datum_over_the_budget_runs_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    host = random_llama()
    host.batch_memory_bytes = 1
    rows = counting_calls(monkeypatch)
    outputs, _ = run(host, rl_data([50, 70, 30], VOCAB))
    assert rows == [1, 1, 1]
    assert [len(out["logprobs"]) for out in outputs] == [50, 70, 30]


def test_the_estimate_grows_with_the_model_and_backward() -> None:
    small = random_llama().base.model
    memory = BatchMemory.of(small, backward=True)
    assert memory.per_token > BatchMemory.of(small, backward=False).per_token
    assert memory.batch_bytes(2, 100) > 2 * memory.batch_bytes(1, 50)  # T^2 attention term
    small.config.num_hidden_layers = 20
    assert BatchMemory.of(small, backward=True).per_token > memory.per_token


def old_token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The previous path: a full log_softmax, then gather."""
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    if targets.dim() == logits.dim():
        return logprobs.gather(-1, targets)
    return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("shape", [(3, CHUNK_POSITIONS + 7), (2, 5, 3)])
def test_chunked_logprobs_equal_log_softmax(shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    leading = (3, CHUNK_POSITIONS + 7) if len(shape) == 2 else shape[:2]
    logits = (torch.randn(*leading, 50) * 4).requires_grad_(True)
    targets = torch.randint(0, 50, shape)
    ours = token_logprobs(logits, targets)
    theirs = old_token_logprobs(logits, targets)
    # logsumexp against log_softmax: the 50 entries' sum in another float32 order (a
    # chunk's targets taken from another row are off by units)
    assert_float32_close(ours.detach().numpy(), theirs.detach().numpy(), terms=50)
    weights = torch.randn(shape)
    (grad_ours,) = torch.autograd.grad((ours * weights).sum(), logits)
    (grad_theirs,) = torch.autograd.grad((theirs * weights).sum(), logits)
    # each logit's gradient sums the softmax over the entries and the targets' weights
    targets_per_row = shape[2] if len(shape) == 3 else 1
    assert_float32_close(grad_ours.numpy(), grad_theirs.numpy(), terms=50 + targets_per_row)


@pytest.mark.parametrize("model", ["random-llama", "rlv/tiny-chat"])
def test_forward_backward_equals_the_log_softmax_path(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if model == "rlv/tiny-chat":
        host = ModelHost.load(Path(ensure_tiny_model()), model, device="cpu")
        vocab = host.base.vocab_size
    else:
        host, vocab = random_llama(), VOCAB
    data = rl_data([40, 64, 23, 64], vocab, seed=1)
    ours = run(host, data)
    monkeypatch.setattr(forward, "token_logprobs", old_token_logprobs)
    assert_same(host, data, ours, run(host, data))


def test_the_serve_option_reaches_the_loaded_model(tmp_path: Path) -> None:
    service = Service(tmp_path, "cpu", limits=ServerLimits(batch_memory_gb=0.5))
    try:
        assert service.hosts.get("rlv/tiny-chat").batch_memory_bytes == 2**29
    finally:
        service.close()
