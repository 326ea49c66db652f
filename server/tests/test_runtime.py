"""The torch runtime behind ``rlv serve``: losses, grads, sampling, checkpoints, samplers.

Everything runs on a tiny random Llama built offline in a temp dir. Losses and gradients are
checked against an independent implementation: a plain HF model with LoRA applied through
forward hooks (no peft), and the loss formulas written out again below.
"""

from __future__ import annotations

import math
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import tinker
import torch
from rlv_numerics import assert_float32_close, backward_terms
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from rl_verifier import Loss, LossRegistrar, hookimpl
from rl_verifier.base.errors import UserError
from rl_verifier_server.runtime import (
    AdamParams,
    DatumIn,
    LoraSpec,
    ModelHost,
    read_adapter_info,
)
from rl_verifier_server.runtime.decoding import StopCriteria, choose, make_generator
from rl_verifier_server.runtime.losses import CLIENT_SIDE, LossTerms, get_loss, losses
from rl_verifier_server.runtime.types import SamplingParams

# Support: a tiny model and an independent LoRA reference --------------------------------

SENTENCES = [
    "the quick brown fox jumps over the lazy dog.",
    "hello world, please stop here.",
    "LoRA adapters train a low rank update on a frozen base model.",
    "numbers like 12 and 345 are split into pieces.",
]
EOS = "<eos>"
TINY_HIDDEN = 32
TINY_VOCAB = 300  # at most: the BPE trainer's vocab_size
# float32 steps of the longest per-token loss formula (stable_reinforce: a difference, an
# exp, a clamp, a log and four products and sums)
LOSS_STEPS = 8


def build_tiny_model(directory: Path, seed: int = 0) -> Path:
    """A 2-layer Llama (hidden 32, vocab ~300) with a byte-level BPE tokenizer, offline."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_VOCAB,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(SENTENCES * 5, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS)
    fast.save_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=TINY_HIDDEN,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        initializer_range=0.1,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    return directory


class Reference:
    """The same base weights in a plain HF model; LoRA applied by forward hooks computing
    ``y + alpha / r * x @ A.T @ B.T`` from the given tensors (no peft involved)."""

    def __init__(self, model_dir: Path) -> None:
        self.model = LlamaForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
        self.model.eval()
        self.model.requires_grad_(False)

    @contextmanager
    def lora(self, weights: dict[str, torch.Tensor] | None, scaling: float) -> Iterator[None]:
        handles = []
        modules = dict(self.model.named_modules())
        for key, a in (weights or {}).items():
            if ".lora_A." not in key:
                continue
            path = key.removeprefix("base_model.model.").split(".lora_A.")[0]
            b = weights[key.replace(".lora_A.", ".lora_B.")]  # type: ignore[index]

            def hook(
                _m: nn.Module,
                args: tuple[torch.Tensor, ...],
                out: torch.Tensor,
                a: torch.Tensor = a,
                b: torch.Tensor = b,
            ) -> torch.Tensor:
                return out + scaling * (args[0] @ a.T) @ b.T

            handles.append(modules[path].register_forward_hook(hook))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def logprobs(
        self,
        tokens: list[int],
        targets: np.ndarray,
        weights: dict[str, torch.Tensor] | None = None,
        scaling: float = 1.0,
    ) -> torch.Tensor:
        """log p(targets[i] | tokens[:i+1]) ([N] or [N, K] targets)."""
        with self.lora(weights, scaling):
            logits = self.model(input_ids=torch.tensor([tokens])).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        index = torch.as_tensor(targets, dtype=torch.long)
        if index.dim() == 1:
            return logprobs.gather(-1, index[:, None])[:, 0]
        return logprobs.gather(-1, index)

    def argmax_next(
        self, tokens: list[int], weights: dict[str, torch.Tensor] | None, scaling: float
    ) -> int:
        with torch.no_grad(), self.lora(weights, scaling):
            logits = self.model(input_ids=torch.tensor([tokens])).logits[0, -1]
        return int(logits.argmax())


SPEC = LoraSpec(rank=4, seed=0, train_mlp=True, train_attn=True, train_unembed=True)
SEQ = [5, 17, 42, 99, 3, 250, 8, 61, 77, 140, 12, 33, 64, 128, 200, 7]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def reference(model_dir: Path) -> Reference:
    return Reference(model_dir)


@pytest.fixture
def host(model_dir: Path) -> Iterator[ModelHost]:
    loaded = ModelHost.load(model_dir, "tiny-test", device="cpu")
    yield loaded
    loaded.close()


def ce_datum(seq: list[int], weights: np.ndarray | None = None) -> DatumIn:
    inputs: dict[str, np.ndarray] = {"target_tokens": np.array(seq[1:], np.int64)}
    if weights is not None:
        inputs["weights"] = weights.astype(np.float32)
    return DatumIn(list(seq[:-1]), inputs)


def lora_weights(host: ModelHost, adapter: str) -> dict[str, torch.Tensor]:
    return {k: p.detach().clone() for k, p in host.trainers.parameters(adapter).items()}


def scaling(host: ModelHost) -> float:
    return host.trainers.lora_alpha / SPEC.rank


def train(host: ModelHost, adapter: str, steps: int = 3, lr: float = 2e-2) -> None:
    """A few CE steps so that B != 0 and the adapter changes the model."""
    for _ in range(steps):
        host.forward_backward(adapter, [ce_datum(SEQ)], "cross_entropy", {}, backward=True)
        host.trainers.optim_step(adapter, AdamParams(lr))


def forward_logprobs(host: ModelHost, adapter: str, seq: list[int]) -> np.ndarray:
    result = host.forward_backward(adapter, [ce_datum(seq)], "cross_entropy", {}, backward=False)
    return result.outputs[0]["logprobs"]


# Losses -----------------------------------------------------------------------------------


def reference_loss(
    name: str, lp: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]
) -> torch.Tensor:
    """Per-token loss written independently of runtime/losses.py."""
    if name == "cross_entropy":
        per = -(lp * inputs["weights"])
        return per.sum(-1) if per.dim() == 2 else per
    old, adv = inputs["logprobs"], inputs["advantages"]
    ratio = torch.exp(lp - old)
    if name == "importance_sampling":
        return -ratio * adv
    if name == "ppo":
        low = config.get("clip_low_threshold", 0.8)
        high = config.get("clip_high_threshold", 1.2)
        return -torch.min(ratio * adv, ratio.clamp(low, high) * adv)
    if name == "cispo":
        low = config.get("clip_low_threshold", 0.0)
        high = config.get("clip_high_threshold", 4.0)
        return -(ratio.clamp(low, high).detach() * lp * adv)
    if name == "dro":
        beta = config.get("beta", 0.05)
        return -(lp * adv - 0.5 * beta * (lp - old) ** 2)
    if name == "gspo":
        # Value: every token carries the sequence ratio S. Gradient: -S * A * dlp where the
        # unclipped term is taken (or S is inside the clip range), else none.
        low = config.get("clip_low_threshold", 0.9997)
        high = config.get("clip_high_threshold", 1.0004)
        mask = inputs.get("sequence_ratio_mask", adv) != 0
        seq_ratio = float(torch.exp((lp.detach() - old)[mask].mean()))
        clipped = min(max(seq_ratio, low), high)
        value = -torch.minimum(seq_ratio * adv, clipped * adv)
        inside = low <= seq_ratio <= high
        slope = torch.where(inside | (seq_ratio * adv < clipped * adv), -seq_ratio * adv, 0.0)
        return with_gradient(value, slope, lp)
    assert name == "stable_reinforce"
    # On sampled positions: -min(r, 1) * lp * A + kl * (r - 1 - log r), r against the
    # distribution the sampler drew from; d/dlp = -min(r, 1) * A + kl * (r - 1).
    kl = config.get("kl_coeff", 0.0)
    sampled, drawn = inputs["sampled"], inputs["drawn_logprobs"]
    log_r = lp.detach() - drawn
    r = torch.exp(log_r)
    value = sampled * (-torch.clamp(r, max=1.0) * lp.detach() * adv + kl * (r - 1 - log_r))
    slope = sampled * (-torch.clamp(r, max=1.0) * adv + kl * (r - 1))
    return with_gradient(value, slope, lp)


def with_gradient(value: torch.Tensor, slope: torch.Tensor, lp: torch.Tensor) -> torch.Tensor:
    """A tensor equal to ``value`` whose gradient with respect to ``lp`` is ``slope``."""
    carrier = slope.detach() * lp
    return value.detach() + carrier - carrier.detach()


LOSS_CASES = [
    ("cross_entropy", {}),
    ("cross_entropy_2d", {}),
    ("importance_sampling", {}),
    ("ppo", {}),
    ("ppo", {"clip_low_threshold": 0.95, "clip_high_threshold": 1.05}),
    ("cispo", {}),
    ("cispo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}),
    ("dro", {"beta": 0.3}),
    ("gspo", {}),
    ("gspo", {"clip_low_threshold": 0.5, "clip_high_threshold": 2.0}),
    ("gspo_mask", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}),
    ("stable_reinforce", {}),
    ("stable_reinforce", {"kl_coeff": 0.5}),
]


def random_data(name: str, reference: Reference, rng: np.random.Generator) -> list[DatumIn]:
    """Datums of different lengths (so batches are padded), with random loss inputs."""
    data = []
    for length in (9, 14, 5):
        tokens = [int(t) for t in rng.integers(0, 300, size=length)]
        if name == "cross_entropy_2d":
            targets = rng.integers(0, 300, size=(length, 3))
            weights = rng.normal(size=(length, 3))
            data.append(DatumIn(tokens, {"target_tokens": targets, "weights": weights}))
            continue
        targets = rng.integers(0, 300, size=length)
        if name == "cross_entropy":
            # Any real weights: forward_backward_custom sends -dLoss/dlogprobs.
            inputs = {"target_tokens": targets, "weights": rng.normal(size=length)}
            data.append(DatumIn(tokens, inputs))
            continue
        base = reference.logprobs(tokens, targets).detach().numpy()
        advantages = rng.normal(size=length)
        advantages[:2] = 0.0
        inputs = {
            "target_tokens": targets,
            "logprobs": base + rng.normal(scale=0.15, size=length),
            "advantages": advantages,
        }
        derived: dict[str, np.ndarray] = {}
        if name == "gspo_mask":
            inputs["sequence_ratio_mask"] = (rng.random(length) < 0.6).astype(np.float32)
        if name == "stable_reinforce":
            derived["sampled"] = (advantages != 0).astype(np.float32)
            derived["drawn_logprobs"] = base + rng.normal(scale=0.3, size=length)
        data.append(DatumIn(tokens, inputs, derived))
    return data


@pytest.mark.parametrize(("case", "config"), LOSS_CASES)
def test_loss_values_and_grads_match_reference(
    host: ModelHost, reference: Reference, case: str, config: dict[str, float]
) -> None:
    name = {"cross_entropy_2d": "cross_entropy", "gspo_mask": "gspo"}.get(case, case)
    host.trainers.create("a", SPEC)
    train(host, "a")  # non-zero B, so the adapter matters and A gets gradients too
    weights = {k: w.requires_grad_(True) for k, w in lora_weights(host, "a").items()}
    data = random_data(case, reference, np.random.default_rng(1))

    result = host.forward_backward("a", data, name, config, backward=True)

    # The reference sums the same float32 terms in other orders (LoRA by hooks, not peft;
    # one datum, not a padded batch): tolerances of the reductions' sizes, not one
    # machine's last bits. Bugs move far more: a LoRA scaling off by 2 moves logprobs by
    # 5, an attended pad by 0.9; a lost token moves gradients by a share of their scale.
    total = torch.zeros(())
    exact_sum = magnitude = 0.0
    for datum, out in zip(data, result.outputs, strict=True):
        tokens, inputs = datum.tokens, {**datum.inputs, **datum.derived}
        lp = reference.logprobs(tokens, inputs["target_tokens"], weights, scaling(host))
        tensors = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in inputs.items()}
        total = total + reference_loss(name, lp, tensors, config).sum()
        assert out["logprobs"].dtype == np.float32
        assert out["logprobs"].shape == np.shape(inputs["target_tokens"])
        assert out["elementwise_loss"].shape == (len(tokens),)
        assert_float32_close(out["logprobs"], lp.detach().numpy(), terms=TINY_VOCAB)
        # The formula apart from the forward: the reference loss of the server's own
        # logprobs in float64 leaves only the float32 rounding of a few elementwise steps
        # (and of gspo's mean over the datum); a config value ignored (a clip threshold,
        # beta, kl_coeff) moves these losses by 0.02 to 1.6.
        exact = reference_loss(
            name,
            torch.as_tensor(out["logprobs"], dtype=torch.float64),
            {k: t.double() for k, t in tensors.items()},
            config,
        ).numpy()
        assert_float32_close(out["elementwise_loss"], exact, terms=len(tokens) + LOSS_STEPS)
        exact_sum += float(exact.sum())
        magnitude += float(np.abs(exact).sum())
    # loss:sum adds each datum's float32 sum of those losses, of both signs: scaled by
    # their total size, not by the sum's
    longest = max(len(d.tokens) for d in data)
    assert_float32_close(
        result.metrics["loss:sum"], exact_sum, terms=2 * longest + LOSS_STEPS, scale=magnitude
    )
    assert all(key.count(":") == 1 for key in result.metrics)

    total.backward()
    tokens_in_call = sum(len(d.tokens) for d in data)
    terms = backward_terms(tokens_in_call, longest, reference.model.config)
    for key, param in host.trainers.parameters("a").items():
        expected = weights[key].grad
        assert param.grad is not None and expected is not None
        assert_float32_close(param.grad.numpy(), expected.numpy(), terms=terms, err_msg=key)


def test_every_loss_the_pinned_sdk_names_is_served() -> None:
    """A new SDK release that adds a loss fails here until the server implements it."""
    named = set(typing.get_args(tinker.types.LossFnType))
    assert named - set(losses()) == set(CLIENT_SIDE)
    with pytest.raises(UserError, match="forward_backward_custom runs on the client"):
        get_loss("custom")


def test_rl_metrics(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    seq = SEQ[:8]
    lp = forward_logprobs(host, "a", seq)
    inputs = {
        "target_tokens": np.array(seq[1:]),
        "logprobs": lp + np.log(np.array([1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 1.0])),
        "advantages": np.array([0, 0, 1.0, -1.0, 1.0, 1.0, 1.0]),
    }
    result = host.forward_backward("a", [DatumIn(seq[:-1], inputs)], "ppo", {}, backward=False)
    metrics = result.metrics
    # Only positions with a non-zero advantage count: ratios 2, 0.5, 1, 1, 1.
    assert metrics["importance_ratio:max"] == pytest.approx(0.5 * 4, rel=1e-4)
    assert metrics["importance_ratio:min"] == pytest.approx(0.5, rel=1e-4)
    assert metrics["importance_ratio:mean"] == pytest.approx(5.5 / 5, rel=1e-4)
    assert metrics["clip_fraction:mean"] == pytest.approx(2 / 5)


def test_a_loss_is_one_registration_in_cores_table(
    host: ModelHost, register_plugin: Callable[..., Any]
) -> None:
    """A loss a plugin registers (with its ``compute``) is checked and run like the
    built-in ones."""

    def scaled(lp: torch.Tensor, inputs: Mapping[str, torch.Tensor], config: Any) -> LossTerms:
        return LossTerms(-config["scale"] * lp * inputs["advantages"])

    class ScaledLoss:
        @hookimpl
        def register_losses(self, register: LossRegistrar) -> None:
            inputs = ("target_tokens", "advantages")
            register(Loss("scaled", "test", inputs, {"scale": 2.0}, compute=scaled))

    register_plugin(ScaledLoss(), name="scaled-loss")
    host.trainers.create("a", SPEC)
    seq = SEQ[:8]
    advantages = np.linspace(-1.0, 1.0, 7)
    datum = DatumIn(seq[:-1], {"target_tokens": np.array(seq[1:]), "advantages": advantages})
    result = host.forward_backward("a", [datum], "scaled", {"scale": 3.0}, backward=False)
    expected = -3.0 * forward_logprobs(host, "a", seq) * advantages
    np.testing.assert_allclose(result.outputs[0]["elementwise_loss"], expected, rtol=1e-5)
    with pytest.raises(UserError, match="'beta' is not used by loss 'scaled'"):
        host.forward_backward("a", [datum], "scaled", {"beta": 1.0}, backward=False)
    without = DatumIn(seq[:-1], {"target_tokens": np.array(seq[1:])})
    with pytest.raises(UserError, match=r"loss 'scaled' needs loss_fn_inputs\['advantages'\]"):
        host.forward_backward("a", [without], "scaled", None, backward=False)


def test_fresh_adapter_equals_base_model(host: ModelHost, reference: Reference) -> None:
    host.trainers.create("a", SPEC)
    lp = forward_logprobs(host, "a", SEQ)
    expected = reference.logprobs(SEQ[:-1], np.array(SEQ[1:])).detach().numpy()
    # The reference takes log_softmax, the runtime logit - logsumexp: the vocabulary's sum
    # in another float32 order. A LoRA B drawn from N(0, 1e-3) instead of zeros moves
    # these logprobs by 0.05.
    assert_float32_close(lp, expected, terms=TINY_VOCAB)
    base = np.array(host.sampling.prompt_logprobs(None, SEQ)[1:])
    assert_float32_close(base, expected, terms=TINY_VOCAB)


def test_forward_makes_no_grads_and_backward_accumulates(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    train(host, "a", steps=1)
    host.forward_backward("a", [ce_datum(SEQ)], "cross_entropy", {}, backward=False)
    assert all(p.grad is None for p in host.trainers.parameters("a").values())
    before = lora_weights(host, "a")
    assert host.trainers.optim_step("a", AdamParams(1.0))["grad_norm:mean"] == 0.0
    after = lora_weights(host, "a")
    assert all(torch.equal(before[k], after[k]) for k in before)

    first, second = SEQ[:9], SEQ[5:]
    host.forward_backward("a", [ce_datum(first)], "cross_entropy", {}, backward=True)
    host.forward_backward("a", [ce_datum(second)], "cross_entropy", {}, backward=True)
    params = host.trainers.parameters("a")
    accumulated = {k: torch.clone(p.grad) for k, p in params.items() if p.grad is not None}
    assert len(accumulated) == len(params)
    for p in host.trainers.parameters("a").values():
        p.grad = None
    both = [ce_datum(first), ce_datum(second)]
    host.forward_backward("a", both, "cross_entropy", {}, backward=True)
    # One padded batch sums the float32 terms of the two calls in another order; a call's
    # gradients replaced instead of added to moves each parameter's by 14% of its scale.
    tokens = [len(d.tokens) for d in both]
    terms = backward_terms(sum(tokens), max(tokens), host.base.model.config)
    for key, p in host.trainers.parameters("a").items():
        assert p.grad is not None
        assert_float32_close(p.grad.numpy(), accumulated[key].numpy(), terms=terms, err_msg=key)


def test_microbatching_gives_same_results(model_dir: Path) -> None:
    hosts = [
        ModelHost.load(model_dir, "tiny-test", device="cpu", max_batch_tokens=budget)
        for budget in (8192, 20)
    ]
    data = [ce_datum(SEQ[:n]) for n in (16, 4, 9, 12, 3)]
    results = []
    for host in hosts:
        host.trainers.create("a", SPEC)
        train(host, "a", steps=2)
        results.append(host.forward_backward("a", data, "cross_entropy", {}, backward=True))
    big, small = results
    # Micro-batches sum the same terms in another order: float32 tolerances of the
    # reduction's size (a log-softmax over the vocabulary; a gradient summed over every
    # token through the hidden width), not one machine's last bits.
    tokens = sum(len(d.tokens) for d in data)
    for one, other in zip(big.outputs, small.outputs, strict=True):
        assert_float32_close(one["logprobs"], other["logprobs"], terms=TINY_VOCAB)
    assert_float32_close(
        big.metrics["loss:sum"], small.metrics["loss:sum"], terms=tokens * TINY_VOCAB
    )
    grads = [hosts[i].trainers.parameters("a") for i in range(2)]
    for key, param in grads[0].items():
        assert_float32_close(
            grads[1][key].grad.numpy(), param.grad.numpy(), terms=tokens * TINY_HIDDEN
        )


def test_cross_entropy_training_reduces_loss(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    losses = []
    for _ in range(20):
        result = host.forward_backward("a", [ce_datum(SEQ)], "cross_entropy", {}, backward=True)
        losses.append(result.metrics["loss:sum"])
        host.trainers.optim_step("a", AdamParams(1e-2, grad_clip_norm=10.0))
    assert losses[-1] < 0.3 * losses[0], losses


def test_adapters_are_independent_and_seeded(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    host.trainers.create("b", SPEC)
    host.trainers.create("c", LoraSpec(rank=2, seed=1, train_mlp=False, train_unembed=False))
    a, b = lora_weights(host, "a"), lora_weights(host, "b")
    assert all(torch.equal(a[k], b[k]) for k in a)  # same seed, same init
    assert all(".mlp." not in k and "lm_head" not in k for k in host.trainers.parameters("c"))
    before_b = forward_logprobs(host, "b", SEQ)
    train(host, "a")
    train(host, "c")
    assert np.array_equal(forward_logprobs(host, "b", SEQ), before_b)
    assert not np.allclose(forward_logprobs(host, "a", SEQ), before_b)
    host.trainers.drop("a")
    with pytest.raises(UserError, match="unknown training adapter 'a'"):
        forward_logprobs(host, "a", SEQ)
    assert np.array_equal(forward_logprobs(host, "b", SEQ), before_b)


# Sampling ---------------------------------------------------------------------------------


@pytest.mark.parametrize("trained", [False, True])
def test_sampler_logprobs_match_forward(host: ModelHost, trained: bool) -> None:
    host.trainers.create("a", SPEC)
    if trained:
        train(host, "a")
    host.snapshot_sampler("a", "s")
    prompt = SEQ[:6]
    samples = host.sampling.sample("s", prompt, num_samples=4, max_tokens=12, stop=[], seed=3)
    assert len(samples) == 4
    for sample in samples:
        assert len(sample.tokens) == len(sample.logprobs) == 12
        assert sample.stop_reason == "length"
        lp = forward_logprobs(host, "a", prompt + sample.tokens)
        # The sampler's KV cache and one full forward order the same float32 sums
        # differently; a logprob of the wrong position or token is off by 0.1 or more.
        assert_float32_close(sample.logprobs, lp[len(prompt) - 1 :], terms=TINY_VOCAB)
    prompt_lps = host.sampling.prompt_logprobs("s", SEQ)
    assert len(prompt_lps) == len(SEQ) and math.isnan(prompt_lps[0])
    np.testing.assert_allclose(prompt_lps[1:], forward_logprobs(host, "a", SEQ), atol=1e-5)
    if not trained:
        base = host.sampling.sample(None, prompt, num_samples=4, max_tokens=12, stop=[], seed=3)
        assert [s.tokens for s in base] == [s.tokens for s in samples]


def test_seed_determinism(host: ModelHost) -> None:
    first = host.sampling.sample(None, SEQ[:4], num_samples=3, max_tokens=10, stop=[], seed=7)
    again = host.sampling.sample(None, SEQ[:4], num_samples=3, max_tokens=10, stop=[], seed=7)
    other = host.sampling.sample(None, SEQ[:4], num_samples=3, max_tokens=10, stop=[], seed=8)
    assert [s.tokens for s in first] == [s.tokens for s in again]
    assert [s.logprobs for s in first] == [s.logprobs for s in again]
    assert [s.tokens for s in first] != [s.tokens for s in other]
    assert len({tuple(s.tokens) for s in first}) > 1  # samples differ from each other


def test_greedy_is_argmax(host: ModelHost, reference: Reference) -> None:
    host.trainers.create("a", SPEC)
    train(host, "a")
    host.snapshot_sampler("a", "s")
    weights = lora_weights(host, "a")
    for kwargs in ({"temperature": 0.0}, {"top_k": 1}, {"top_p": 1e-6}):
        [sample] = host.sampling.sample("s", SEQ[:5], 1, 8, stop=[], seed=1, **kwargs)
        context = SEQ[:5]
        for token in sample.tokens:
            assert token == reference.argmax_next(context, weights, scaling(host)), kwargs
            context = [*context, token]


def test_top_k_restricts_support(host: ModelHost, reference: Reference) -> None:
    with torch.no_grad():
        logits = reference.model(input_ids=torch.tensor([SEQ[:5]])).logits[0, -1]
    allowed = set(torch.topk(logits, 3).indices.tolist())
    samples = host.sampling.sample(None, SEQ[:5], num_samples=40, max_tokens=1, top_k=3, seed=0)
    seen = {s.tokens[0] for s in samples}
    assert seen <= allowed and len(seen) > 1


@pytest.mark.parametrize(
    ("params", "support"),
    [
        (SamplingParams(top_p=0.7), {0, 1}),  # mass before token 1 is 0.5 < 0.7, before 2 is 0.8
        (SamplingParams(top_k=3), {0, 1, 2}),
        (SamplingParams(temperature=0.5, top_k=3, top_p=0.9), {0, 1}),
        (SamplingParams(), {0, 1, 2, 3}),
    ],
)
def test_top_p_top_k_filtering(params: SamplingParams, support: set[int]) -> None:
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = torch.log(probs).expand(4000, -1)
    drawn, drawn_lps = choose(params, logits, make_generator(torch.device("cpu"), 0))
    counts = torch.bincount(drawn, minlength=4).double()
    assert set(torch.nonzero(counts).flatten().tolist()) == support
    # Each token's logprob under the distribution it was drawn from: that distribution
    # lives on the support (its probabilities add up to 1) and puts each token's
    # temperature-scaled weight on it.
    by_token = {int(t): float(lp) for t, lp in zip(drawn, drawn_lps, strict=True)}
    assert sum(math.exp(lp) for lp in by_token.values()) == pytest.approx(1.0, abs=1e-5)
    weights = {t: float(probs[t]) ** (1 / params.temperature) for t in support}
    for token, lp in by_token.items():
        assert math.exp(lp) == pytest.approx(weights[token] / sum(weights.values()), rel=1e-4)
    if params == SamplingParams():
        # Seeded, so the draw is the same on every run; should the generator's stream
        # change, a right sampler stays within 5 binomial standard deviations of each
        # probability (it fails that by chance with odds under 1 in 10^5 per release),
        # and one that ignores the distribution (uniform) is off by 30 of them.
        n = float(counts.sum())
        spread = 5 * np.sqrt(probs.numpy() * (1 - probs.numpy()) / n)
        np.testing.assert_array_less(np.abs((counts / n).numpy() - probs.numpy()), spread)


def test_stop_tokens_strings_and_length(host: ModelHost) -> None:
    prompt = SEQ[:5]
    [free] = host.sampling.sample(None, prompt, 1, 20, temperature=0.0, stop=[])
    assert free.stop_reason == "length" and len(free.tokens) == 20

    stop_token = free.tokens[6]
    first = free.tokens.index(stop_token)
    [by_token] = host.sampling.sample(None, prompt, 1, 20, temperature=0.0, stop=[stop_token, 299])
    assert by_token.stop_reason == "stop"
    assert by_token.tokens == free.tokens[: first + 1]  # the stop token is kept
    assert by_token.logprobs == pytest.approx(free.logprobs[: first + 1], abs=1e-6)

    decode = host.base.tokenizer.decode
    text = decode(free.tokens[4:8])
    stop_text = text[1:4] if len(text) >= 4 else text
    end = next(i for i in range(1, 21) if stop_text in decode(free.tokens[:i]))
    stops = [stop_text, "\x00zz"]
    [by_string] = host.sampling.sample(None, prompt, 1, 20, temperature=0.0, stop=stops)
    assert by_string.stop_reason == "stop"
    assert by_string.tokens == free.tokens[:end]  # ends with the token completing the string
    assert stop_text in decode(by_string.tokens)


def test_stop_none_means_eos(host: ModelHost) -> None:
    eos = host.base.tokenizer.eos_token_id
    assert eos in host.base.eos_token_ids
    criteria = StopCriteria.parse(None, set(host.base.eos_token_ids), host.base.tokenizer)
    assert criteria.hit([5, 6, eos]) and not criteria.hit([eos, 6])
    assert not StopCriteria.parse([], set(host.base.eos_token_ids), host.base.tokenizer).hit([eos])
    with pytest.raises(UserError, match="not a mix"):
        StopCriteria.parse(cast(Any, ["a", 3]), set(), host.base.tokenizer)


def test_samples_stop_independently(host: ModelHost) -> None:
    samples = host.sampling.sample(
        None, SEQ[:3], num_samples=16, max_tokens=12, seed=5, stop=list(range(0, 300, 7))
    )
    lengths = {len(s.tokens) for s in samples}
    assert len(lengths) > 1  # finished rows leave the batch, the others go on
    for s in samples:
        stopped = s.tokens[-1] % 7 == 0
        assert s.stop_reason == ("stop" if stopped else "length")
        assert all(t % 7 for t in s.tokens[:-1])


def test_read_only_wire_arrays_and_any_int_seed(host: ModelHost) -> None:
    """The HTTP layer decodes with np.frombuffer (read-only); seeds may be any int."""
    host.trainers.create("big-seed", LoraSpec(rank=2, seed=2**70 + 3))
    frozen = np.frombuffer(np.array(SEQ[1:], np.int64).tobytes(), np.int64)
    weights = np.frombuffer(np.ones(len(SEQ) - 1, np.float32).tobytes(), np.float32)
    datum = DatumIn(SEQ[:-1], {"target_tokens": frozen, "weights": weights})
    result = host.forward_backward("big-seed", [datum], "cross_entropy", {}, backward=True)
    assert result.outputs[0]["logprobs"].shape == (len(SEQ) - 1,)
    host.sampling.sample(None, SEQ[:3], 2, 3, seed=-5)


# Snapshots, checkpoints -------------------------------------------------------------------


def test_snapshot_is_isolated_from_training(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    train(host, "a", steps=1)
    host.snapshot_sampler("a", "old")
    before = host.sampling.prompt_logprobs("old", SEQ)
    old_samples = host.sampling.sample("old", SEQ[:4], 2, 6, seed=11)
    train(host, "a", steps=3)
    assert host.sampling.prompt_logprobs("old", SEQ)[1:] == before[1:]
    assert host.sampling.sample("old", SEQ[:4], 2, 6, seed=11) == old_samples
    assert not np.allclose(forward_logprobs(host, "a", SEQ), before[1:])


def test_save_and_restore_exactly(host: ModelHost, tmp_path: Path) -> None:
    host.trainers.create("a", SPEC)
    train(host, "a", steps=3)
    host.forward_backward("a", [ce_datum(SEQ)], "cross_entropy", {}, backward=True)
    host.trainers.save_state("a", tmp_path / "ckpt")  # pending grads are not part of the state
    info = read_adapter_info(tmp_path / "ckpt")
    assert (info.kind, info.step, info.has_optimizer) == ("training", 3, True)
    assert info.layout.spec == SPEC

    spec = host.trainers.create_from_state("b", tmp_path / "ckpt", with_optimizer=True)
    assert spec == SPEC and host.trainers.step("b") == 3
    assert np.array_equal(forward_logprobs(host, "a", SEQ), forward_logprobs(host, "b", SEQ))
    for p in host.trainers.parameters("a").values():
        p.grad = None

    adam = {
        "learning_rate": 1e-2,
        "beta1": 0.8,
        "beta2": 0.9,
        "eps": 1e-8,
        "weight_decay": 0.1,
        "grad_clip_norm": 1.0,
    }
    for adapter in ("a", "b"):
        host.forward_backward(adapter, [ce_datum(SEQ[::-1])], "cross_entropy", {}, backward=True)
        host.trainers.optim_step(adapter, AdamParams(**adam))
    a, b = lora_weights(host, "a"), lora_weights(host, "b")
    assert all(torch.equal(a[k], b[k]) for k in a)

    host.trainers.create_from_state("fresh", tmp_path / "ckpt", with_optimizer=False)
    host.forward_backward("fresh", [ce_datum(SEQ[::-1])], "cross_entropy", {}, backward=True)
    host.trainers.optim_step("fresh", AdamParams(**adam))
    fresh = lora_weights(host, "fresh")
    assert not all(torch.equal(a[k], fresh[k]) for k in a)  # other Adam moments

    host.trainers.load_state("fresh", tmp_path / "ckpt", with_optimizer=True)
    host.trainers.load_state("a", tmp_path / "ckpt", with_optimizer=True)
    assert np.array_equal(forward_logprobs(host, "a", SEQ), forward_logprobs(host, "fresh", SEQ))


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")
def test_checkpoint_is_a_peft_adapter(host: ModelHost, tmp_path: Path, model_dir: Path) -> None:
    from peft import PeftModel

    host.trainers.create("a", SPEC)
    train(host, "a")
    host.trainers.save_state("a", tmp_path / "ckpt", with_optimizer=False)
    base = LlamaForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(base, str(tmp_path / "ckpt")).eval()
    with torch.no_grad():
        logits = peft_model(input_ids=torch.tensor([SEQ[:-1]])).logits[0]
    expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(SEQ[1:])[:, None])[:, 0]
    # peft's LoRA and log_softmax against the runtime's: the same float32 sums in other
    # orders. An adapter_config with the wrong lora_alpha (scaling off by 2) is off by 5.
    assert_float32_close(forward_logprobs(host, "a", SEQ), expected.numpy(), terms=TINY_VOCAB)


def test_samplers_from_directories_and_eviction(model_dir: Path, tmp_path: Path) -> None:
    host = ModelHost.load(model_dir, "tiny-test", device="cpu", max_resident_samplers=2)
    host.trainers.create("a", SPEC)
    expected: dict[str, list[float]] = {}
    for i in range(4):
        train(host, "a", steps=1)
        directory = tmp_path / f"snap{i}" if i % 2 else None
        host.snapshot_sampler("a", f"s{i}", directory)
        expected[f"s{i}"] = host.sampling.prompt_logprobs(f"s{i}", SEQ)
    host.trainers.save_state("a", tmp_path / "train")
    host.snapshots.load("from-train", tmp_path / "train")
    host.snapshots.load("from-snap", tmp_path / "snap1")
    for sampler_id, lps in expected.items():  # evicted ones come back from disk, exactly
        assert host.sampling.prompt_logprobs(sampler_id, SEQ)[1:] == lps[1:], sampler_id
    assert host.sampling.prompt_logprobs("from-snap", SEQ)[1:] == expected["s1"][1:]
    assert host.sampling.prompt_logprobs("from-train", SEQ)[1:] == expected["s3"][1:]
    assert read_adapter_info(tmp_path / "snap1").kind == "sampler"
    host.snapshot_sampler("a", "s0")  # same id again: replaced
    host.snapshots.drop("s1")
    with pytest.raises(UserError, match="unknown sampler 's1'"):
        host.sampling.sample("s1", SEQ[:3], 1, 2)
    with pytest.raises(UserError, match="no optimizer state"):
        host.trainers.create_from_state("x", tmp_path / "snap1", with_optimizer=True)
    with pytest.raises(UserError, match="no adapter checkpoint"):
        host.snapshots.load("nowhere", tmp_path / "missing")
    host.close()


def test_incompatible_checkpoints_are_refused(model_dir: Path, tmp_path: Path) -> None:
    host = ModelHost.load(model_dir, "tiny-test", device="cpu")
    host.trainers.create("a", SPEC)
    host.trainers.save_state("a", tmp_path / "ckpt")
    small = ModelHost.load(model_dir, "tiny-test", device="cpu")
    small.trainers.create("b", LoraSpec(rank=2, seed=0))
    with pytest.raises(UserError, match="rank 4"):
        small.trainers.load_state("b", tmp_path / "ckpt", with_optimizer=False)
    with pytest.raises(UserError, match="no adapter checkpoint"):
        small.trainers.load_state("b", tmp_path / "missing", with_optimizer=False)

    config = LlamaConfig.from_pretrained(str(model_dir))
    config.hidden_size, config.intermediate_size = 48, 96
    other_dir = tmp_path / "wider-model"
    LlamaForCausalLM(config).save_pretrained(other_dir)
    (other_dir / "tokenizer.json").write_bytes((model_dir / "tokenizer.json").read_bytes())
    tokenizer_config = (model_dir / "tokenizer_config.json").read_bytes()
    (other_dir / "tokenizer_config.json").write_bytes(tokenizer_config)
    wider = ModelHost.load(other_dir, "wider", device="cpu")
    with pytest.raises(UserError, match="has shape"):
        wider.snapshots.load("s", tmp_path / "ckpt")
    with pytest.raises(UserError, match="has shape"):
        wider.trainers.create_from_state("c", tmp_path / "ckpt", with_optimizer=True)
    assert not wider.trainers.has("c") and not wider.snapshots.has("s")
    wider.trainers.create("c", SPEC)  # nothing half-made was left behind


# Bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loss", "inputs", "config", "message"),
    [
        ("mse", {}, {}, r"unknown loss function 'mse'.*cross_entropy, importance_sampling"),
        ("ppo", {}, {"clip_ratio": 0.2}, r"'clip_ratio' is not used by loss 'ppo'.*clip_low"),
        ("ppo", {}, {"clip_low_threshold": 2.0}, "must not exceed clip_high_threshold"),
        (
            "importance_sampling",
            {"advantages": None},
            {},
            r"datum 0: loss 'importance_sampling' needs loss_fn_inputs\['advantages'\].*\[7\]",
        ),
        (
            "importance_sampling",
            {"advantages": np.zeros(6)},
            {},
            r"loss_fn_inputs\['advantages'\] has shape \[6\]; expected \[7\]",
        ),
        (
            "cross_entropy",
            {"target_tokens": np.arange(6)},
            {},
            r"'target_tokens'\] has shape \[6\]; expected \[N\] = \[7\] or \[N, K\]",
        ),
        (
            "importance_sampling",
            {"target_tokens": np.zeros((7, 2), np.int64)},
            {},
            r"has shape \[7, 2\]; expected \[N\] = \[7\] to match",
        ),
        (
            "cross_entropy",
            {"target_tokens": np.full(7, 300)},
            {},
            r"target_tokens'\] contains token id 300, outside .*\[0, 300\)",
        ),
        ("cross_entropy", {"weights": np.ones((7, 2))}, {}, r"'weights'\] has shape \[7, 2\]"),
        ("cross_entropy", {"mask": np.ones(7)}, {}, r"'mask'\] is not used by loss"),
        ("importance_sampling", {"logprobs": np.full(7, np.nan)}, {}, "NaN or infinite"),
    ],
)
def test_bad_forward_backward_inputs(
    host: ModelHost,
    loss: str,
    inputs: dict[str, np.ndarray | None],
    config: dict[str, float],
    message: str,
) -> None:
    host.trainers.create("a", SPEC)
    full: dict[str, np.ndarray] = {
        "target_tokens": np.arange(1, 8),
        "weights": np.ones(7, np.float32),
        "logprobs": np.zeros(7, np.float32),
        "advantages": np.ones(7, np.float32),
    }
    for key in ("weights",) if loss != "cross_entropy" else ("logprobs", "advantages"):
        del full[key]
    for key, value in inputs.items():
        if value is None:
            del full[key]
        else:
            full[key] = value
    with pytest.raises(UserError, match=message):
        host.forward_backward("a", [DatumIn(list(range(7)), full)], loss, config, True)
    assert all(p.grad is None for p in host.trainers.parameters("a").values())


def test_bad_requests(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    with pytest.raises(UserError, match="model_input tokens contains token id 300"):
        host.forward_backward("a", [ce_datum([1, 2, 300, 4])], "cross_entropy", {}, False)
    with pytest.raises(UserError, match=r"datum 1: 200 tokens exceed .* 128"):
        host.forward_backward("a", [ce_datum(SEQ), ce_datum([1] * 201)], "cross_entropy", {}, True)
    with pytest.raises(UserError, match="unknown training adapter 'zz'"):
        host.trainers.optim_step("zz", AdamParams(1e-3))
    with pytest.raises(UserError, match="already exists"):
        host.trainers.create("a", SPEC)
    with pytest.raises(UserError, match="rank must be a positive integer"):
        host.trainers.create("r0", LoraSpec(rank=0))
    with pytest.raises(UserError, match="at least one of train_mlp"):
        host.trainers.create("none", LoraSpec(4, None, False, False, False))
    with pytest.raises(UserError, match="unknown sampler 'nope'"):
        host.sampling.sample("nope", [1, 2], 1, 4)
    with pytest.raises(UserError, match=r"prompt contains token id 1000"):
        host.sampling.sample(None, [1, 1000], 1, 4)
    with pytest.raises(UserError, match=r"\(120 tokens\) \+ max_tokens \(16\) exceeds .* 128"):
        host.sampling.sample(None, [1] * 120, 1, 16)
    with pytest.raises(UserError, match="temperature"):
        host.sampling.sample(None, [1, 2], 1, 4, temperature=-1.0)
    with pytest.raises(UserError, match="top_p"):
        host.sampling.sample(None, [1, 2], 1, 4, top_p=0.0)
    with pytest.raises(UserError, match=r"invalid AdamParams\.beta2"):
        host.trainers.optim_step("a", AdamParams(1e-3, beta2=1.0))
    with pytest.raises(UserError, match="prompt is empty"):
        host.sampling.prompt_logprobs(None, [])


def test_builtin_tiny_chat_model(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The server's own model (rlv/tiny-chat): chat stop strings, sampler == forward."""
    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    host = ModelHost.load(ensure_tiny_model(tmp_path_factory.mktemp("cache")), "rlv/tiny-chat")
    text = host.base.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Is 2 + 2 = 4?"}], add_generation_prompt=True, tokenize=False
    )
    prompt = host.base.tokenizer.encode(text, add_special_tokens=False)
    host.trainers.create("a", LoraSpec(rank=8, seed=0))
    samples = host.sampling.sample(None, prompt, 4, 24, stop=["<|im_end|>", "\n"], seed=0)
    stops = ("<|im_end|>", "\n")
    assert {s.stop_reason for s in samples} == {"stop", "length"}
    for sample in samples:
        text = host.base.tokenizer.decode(sample.tokens)
        before = host.base.tokenizer.decode(sample.tokens[:-1])
        assert not any(stop in before for stop in stops)
        assert any(stop in text for stop in stops) == (sample.stop_reason == "stop")
        full = prompt + sample.tokens
        lp = forward_logprobs(host, "a", full)[len(prompt) - 1 :]
        assert_float32_close(sample.logprobs, lp, terms=host.base.vocab_size)  # KV cache


# Throughput, as a smoke check (figures are printed with -s, not asserted) --------------------


def test_throughput_smoke(host: ModelHost) -> None:
    host.trainers.create("a", SPEC)
    data = [ce_datum(SEQ * 4) for _ in range(8)]
    start = time.perf_counter()
    for _ in range(3):
        host.forward_backward("a", data, "cross_entropy", {}, backward=True)
    fb_rate = 3 * sum(len(d.tokens) for d in data) / (time.perf_counter() - start)
    start = time.perf_counter()
    samples = host.sampling.sample(None, SEQ[:4], num_samples=8, max_tokens=64, stop=[], seed=0)
    sample_rate = sum(len(s.tokens) for s in samples) / (time.perf_counter() - start)
    print(f"forward_backward {fb_rate:.0f} tok/s, sampling {sample_rate:.0f} tok/s")
    # No speed is asserted (a shared machine's load decides it; benchmarks/ measures it):
    # the smoke is that both ran to the end.
    assert [len(s.tokens) for s in samples] == [64] * 8


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("learning_rate", -1e-3),
        ("beta1", 1.0),
        ("beta2", -0.1),
        ("eps", float("nan")),
        ("weight_decay", float("inf")),
        ("grad_clip_norm", -1.0),
    ],
)
def test_adam_params_are_checked_one_by_one(field: str, bad: float) -> None:
    good = {
        "learning_rate": 1e-3,
        "beta1": 0.9,
        "beta2": 0.999,
        "eps": 1e-8,
        "weight_decay": 0.0,
        "grad_clip_norm": 1.0,
    }
    AdamParams(**good).check()  # the defaults pass
    with pytest.raises(UserError, match=rf"invalid AdamParams\.{field}: "):
        AdamParams(**{**good, field: bad}).check()
