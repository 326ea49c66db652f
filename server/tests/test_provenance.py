"""``stable_reinforce`` and ``gspo`` through the real SDK: sampling with
``record_stability_info``, datums with provenance (as the cookbook builds them), and the
checks on what a datum claims about its tokens."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import tinker
import torch
from rlv_numerics import float32_tolerance
from tinker import types
from transformers import AutoModelForCausalLM

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models.tiny_model import VOCAB_SIZE, ensure_tiny_model

MODEL = "rlv/tiny-chat"
PROMPT = [1, 20, 30, 40, 2]


def logprob_error(logprobs: np.ndarray) -> float:
    """How far two float32 computations of these logprobs may differ: the trainer's full
    forward and the sampler's KV cache (or plain transformers) sum the vocabulary's terms
    in other orders. A ratio to the wrong distribution (temperature 1 instead of the
    sampler's 0.5) moves a logprob by 0.2 to 0.4 on these sequences."""
    return float32_tolerance(logprobs, VOCAB_SIZE)


@pytest.fixture(scope="module")
def service_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tinker.ServiceClient]:
    data = tmp_path_factory.mktemp("server-data")
    with (
        LocalServer(data, log_path=data / "server.log") as server,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv("TINKER_BASE_URL", server.url)
        env.setenv("TINKER_API_KEY", "tml-local")
        with tinker.ServiceClient() as client:
            yield client


@pytest.fixture(scope="module")
def training(service_client: tinker.ServiceClient) -> tinker.TrainingClient:
    return service_client.create_lora_training_client(base_model=MODEL, rank=4, seed=0).result()


def sample(
    sampler: tinker.SamplingClient, temperature: float, count: int = 2
) -> list[types.SampledSequence]:
    params = types.SamplingParams(max_tokens=6, temperature=temperature, seed=3, stop=[])
    prompt = types.ModelInput.from_ints(PROMPT)
    response = sampler.sample(prompt=prompt, num_samples=count, sampling_params=params).result()
    return list(response.sequences)


def datum(sequence: types.SampledSequence, advantage: float = 1.0) -> types.Datum:
    """The cookbook's ``rl_loop`` datum: placeholder targets on the prompt, and provenance
    naming the prompt and the sampled tokens."""
    n, ob = len(sequence.tokens), len(PROMPT) - 1
    plain = types.Datum(
        model_input=types.ModelInput.from_ints(PROMPT + list(sequence.tokens[:-1])),
        loss_fn_inputs={
            "target_tokens": [0] * ob + list(sequence.tokens),
            "logprobs": [0.0] * ob + list(sequence.logprobs or []),
            "advantages": [0.0] * ob + [advantage] * n,
        },
    )
    sid = sequence.sequence_id
    return plain.with_provenance(
        model_input=[
            types.PromptProvenanceSpan(sequence_id=sid, length=len(PROMPT)),
            types.SampledProvenanceSpan(sequence_id=sid, length=n - 1),
        ],
        loss_fn_inputs=[
            types.PromptProvenanceSpan(sequence_id=sid, offset=1, length=ob),
            types.SampledProvenanceSpan(sequence_id=sid, length=n),
        ],
    )


def drawn_logprobs(sequence: types.SampledSequence, temperature: float) -> np.ndarray:
    """Each sampled token's logprob under the base model at ``temperature``, computed with
    plain transformers (a fresh adapter leaves the model unchanged)."""
    model = AutoModelForCausalLM.from_pretrained(str(ensure_tiny_model()), dtype=torch.float32)
    ids = torch.tensor([PROMPT + list(sequence.tokens)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(PROMPT) - 1 : -1]
    scaled = torch.log_softmax(logits / temperature, dim=-1)
    return scaled.gather(-1, torch.tensor(sequence.tokens)[:, None])[:, 0].numpy()


def test_on_policy_stable_reinforce_is_reinforce(training: tinker.TrainingClient) -> None:
    sampler = training.save_weights_and_get_sampling_client(record_stability_info=True).result()
    sequences = sample(sampler, temperature=1.0)
    assert len({s.sequence_id for s in sequences}) == 2
    out = training.forward([datum(s, 0.5) for s in sequences], "stable_reinforce").result()
    ob = len(PROMPT) - 1
    errors = []
    for result in out.loss_fn_outputs:
        lp = result["logprobs"].to_numpy()
        loss = result["elementwise_loss"].to_numpy()
        assert np.all(loss[:ob] == 0.0)
        # r = exp(lp - drawn) is 1 up to the logprobs' float32 error, and the loss
        # -min(r, 1) * lp * A is -lp * A up to that relative error
        errors.append(logprob_error(lp[ob:]))
        np.testing.assert_allclose(loss[ob:], -0.5 * lp[ob:], rtol=errors[-1])
    assert out.metrics["importance_ratio:mean"] == pytest.approx(1.0, abs=max(errors))


def test_the_ratio_is_to_the_distribution_the_sampler_drew_from(
    training: tinker.TrainingClient,
) -> None:
    sampler = training.save_weights_and_get_sampling_client(record_stability_info=True).result()
    [sequence] = sample(sampler, temperature=0.5, count=1)
    out = training.forward([datum(sequence, 2.0)], "stable_reinforce", {"kl_coeff": 0.1})
    result = out.result().loss_fn_outputs[0]
    ob = len(PROMPT) - 1
    lp = result["logprobs"].to_numpy()[ob:].astype(np.float64)
    drawn = drawn_logprobs(sequence, 0.5)
    log_ratio = lp - drawn
    ratio = np.exp(log_ratio)
    expected = -np.minimum(ratio, 1.0) * lp * 2.0 + 0.1 * (ratio - 1 - log_ratio)
    # Both sides take the server's lp; its drawn logprobs (a KV cache) and plain
    # transformers' differ by the logits' float32 error, doubled at temperature 0.5, and
    # the loss moves by that times its slope in log r, at most 2 |lp| + 0.1 |r - 1|.
    slope = 2.0 * np.abs(lp) + 0.1 * np.abs(ratio - 1)
    tolerance = slope * 2 * logprob_error(drawn) + float32_tolerance(expected, 8)
    loss = result["elementwise_loss"].to_numpy()[ob:]
    np.testing.assert_array_less(np.abs(loss - expected), tolerance)
    assert not np.allclose(ratio, 1.0)  # at temperature 0.5 the two distributions differ


def test_claims_that_do_not_hold_are_refused(
    service_client: tinker.ServiceClient, training: tinker.TrainingClient
) -> None:
    recording = training.save_weights_and_get_sampling_client(record_stability_info=True).result()
    [sequence] = sample(recording, temperature=1.0, count=1)
    good = datum(sequence)

    def refused(data: list[types.Datum], match: str) -> None:
        with pytest.raises(tinker.RequestFailedError, match=match):
            training.forward(data, "stable_reinforce").result()

    refused([types.Datum(good.model_input, good.loss_fn_inputs)], "has no provenance")
    wrong = dict(good.loss_fn_inputs)
    wrong["target_tokens"] = [0] * (len(PROMPT) - 1) + [t + 1 for t in sequence.tokens]
    forged = types.Datum(good.model_input, wrong, good.model_input_spans, good.loss_fn_input_spans)
    refused([forged], "holds token")
    prompt_advantage = dict(good.loss_fn_inputs)
    prompt_advantage["advantages"] = [1.0] * len(sequence.tokens) + [1.0] * (len(PROMPT) - 1)
    on_prompt = types.Datum(
        good.model_input, prompt_advantage, good.model_input_spans, good.loss_fn_input_spans
    )
    refused([on_prompt], "not a sampled token")

    plain = training.save_weights_and_get_sampling_client().result()
    [unrecorded] = sample(plain, temperature=1.0, count=1)
    refused([datum(unrecorded)], "is not recorded")

    other = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    assert other.forward([good], "stable_reinforce").result().metrics["loss:sum"] != 0
    with tinker.ServiceClient() as elsewhere:
        stranger = elsewhere.create_lora_training_client(base_model=MODEL, rank=4).result()
        with pytest.raises(tinker.RequestFailedError, match="sampled in another session"):
            stranger.forward([good], "stable_reinforce").result()


def test_gspo_takes_a_sequence_ratio_mask(training: tinker.TrainingClient) -> None:
    sampler = training.save_weights_and_get_sampling_client().result()
    [sequence] = sample(sampler, temperature=1.0, count=1)
    plain = datum(sequence, 1.0)
    inputs = dict(plain.loss_fn_inputs)
    ob = len(PROMPT) - 1
    inputs["sequence_ratio_mask"] = [0.0] * ob + [1.0] * len(sequence.tokens)
    out = training.forward([types.Datum(plain.model_input, inputs)], "gspo").result()
    result = out.loss_fn_outputs[0]
    lp = result["logprobs"].to_numpy()
    # A fresh sampler: the sequence ratio is 1 up to the logprobs' float32 error (the
    # trainer's against the sampler's), so each sampled token's loss is -A.
    loss = result["elementwise_loss"].to_numpy()[ob:]
    np.testing.assert_allclose(loss, -1.0, rtol=logprob_error(lp[ob:]))
    assert np.all(result["elementwise_loss"].to_numpy()[:ob] == 0.0)
    assert lp.shape == (ob + len(sequence.tokens),)
