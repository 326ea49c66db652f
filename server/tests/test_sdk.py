"""The official, unmodified ``tinker`` SDK against ``rlv serve``.

These tests start a real server process and drive it through the SDK's public calls,
so a change in the SDK's protocol breaks them here rather than for our users.
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tinker
from rlv_numerics import assert_float32_close
from tinker import types

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models.tiny_model import VOCAB_SIZE

MODEL = "rlv/tiny-chat"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("server-data")
    with LocalServer(data, log_path=data / "server.log") as running:
        yield running


@pytest.fixture(scope="module")
def service_client(server: LocalServer) -> Iterator[tinker.ServiceClient]:
    saved = {k: os.environ.get(k) for k in ("TINKER_BASE_URL", "TINKER_API_KEY")}
    os.environ["TINKER_BASE_URL"] = server.url
    os.environ["TINKER_API_KEY"] = "tml-local"
    with tinker.ServiceClient() as client:  # closing ends the session and its heartbeat
        yield client
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def datum_for(prompt: list[int], sequence: types.SampledSequence, advantage: float) -> types.Datum:
    """Shifted input/target with the sampler's logprobs on sampled tokens only."""
    tokens = prompt + list(sequence.tokens)
    n_prompt = len(prompt) - 1
    logprobs = [0.0] * n_prompt + list(sequence.logprobs or [])
    advantages = [0.0] * n_prompt + [advantage] * len(sequence.tokens)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tokens[1:],
            "logprobs": logprobs,
            "advantages": advantages,
        },
    )


def test_seed_loop_runs_unchanged(service_client: tinker.ServiceClient) -> None:
    training = service_client.create_lora_training_client(base_model=MODEL, rank=8, seed=0).result()
    tokenizer = training.get_tokenizer()
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say yes."}], add_generation_prompt=True, tokenize=False
    )
    prompt = tokenizer.encode(text, add_special_tokens=False)
    sampler = training.save_weights_and_get_sampling_client().result()
    params = types.SamplingParams(max_tokens=12, temperature=1.0, seed=7)
    result = sampler.sample(
        prompt=types.ModelInput.from_ints(prompt), num_samples=8, sampling_params=params
    ).result()
    assert len(result.sequences) == 8
    for sequence in result.sequences:
        assert sequence.stop_reason in ("stop", "length")
        assert sequence.logprobs is not None and len(sequence.logprobs) == len(sequence.tokens)
        assert all(lp <= 0 and math.isfinite(lp) for lp in sequence.logprobs)

    data = [datum_for(prompt, s, a) for s, a in zip(result.sequences, [1, -1] * 4, strict=True)]
    output = training.forward_backward(data, loss_fn="importance_sampling").result()
    assert "loss:sum" in output.metrics
    assert len(output.loss_fn_outputs) == 8
    # Before any update, trainer and sampler agree: every importance ratio is 1, up to the
    # float32 orders of a full forward and of the sampler's KV cache.
    for datum, out, sequence in zip(data, output.loss_fn_outputs, result.sequences, strict=True):
        trainer_lps = out["logprobs"].to_numpy()[len(prompt) - 1 :]
        assert_float32_close(trainer_lps, sequence.logprobs, terms=VOCAB_SIZE)
        assert out["logprobs"].shape == [len(datum.model_input.to_ints())]

    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    path = training.save_state(name="after-one-step").result().path
    assert path.endswith("/weights/after-one-step")

    restored = service_client.create_training_client_from_state_with_optimizer(path).result()
    before = training.forward(data[:2], "importance_sampling").result()
    after = restored.forward(data[:2], "importance_sampling").result()
    for a, b in zip(before.loss_fn_outputs, after.loss_fn_outputs, strict=True):
        assert np.array_equal(a["logprobs"].to_numpy(), b["logprobs"].to_numpy())

    again = (
        restored.save_weights_and_get_sampling_client()
        .result()
        .sample(prompt=types.ModelInput.from_ints(prompt), num_samples=2, sampling_params=params)
        .result()
    )
    assert len(again.sequences) == 2


def test_sampler_is_a_frozen_snapshot(service_client: tinker.ServiceClient) -> None:
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4, seed=1).result()
    tokens = [5, 17, 42, 99, 7, 3]
    sampler = training.save_weights_and_get_sampling_client().result()
    first = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * 5},
    )
    for _ in range(3):
        training.forward_backward([datum], "cross_entropy").result()
        training.optim_step(types.AdamParams(learning_rate=5e-2)).result()
    second = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
    assert first[0] is None and second[0] is None
    assert first[1:] == second[1:]
    newer = training.save_weights_and_get_sampling_client().result()
    third = newer.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
    assert third[1:] != first[1:]


def test_cross_entropy_lowers_loss(service_client: tinker.ServiceClient) -> None:
    training = service_client.create_lora_training_client(base_model=MODEL, rank=8, seed=2).result()
    tokenizer = training.get_tokenizer()
    tokens = tokenizer.encode("The answer is forty two.")
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )
    losses = []
    for _ in range(8):
        out = training.forward_backward([datum], "cross_entropy").result()
        losses.append(out.metrics["loss:sum"])
        training.optim_step(types.AdamParams(learning_rate=2e-2)).result()
    assert losses[-1] < 0.7 * losses[0], losses


def test_checkpoints_are_listed_by_the_rest_client(
    server: LocalServer, service_client: tinker.ServiceClient
) -> None:
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    path = training.save_state(name="listed").result().path
    sampler_path = training.save_weights_for_sampler(name="listed-sampler").result().path
    # An explicit address: the SDK keeps one RestClient() per process for the environment's,
    # whichever server it pointed at when first made (another test module's, say).
    rest = tinker.RestClient(base_url=server.url, api_key="tml-local")
    run_id = path.split("/")[2]
    listed = rest.list_checkpoints(run_id).result().checkpoints
    assert {c.tinker_path for c in listed} == {path, sampler_path}
    info = rest.get_weights_info_by_tinker_path(path).result()
    assert info.lora_rank == 4 and info.is_lora
    run = rest.get_training_run(run_id).result()
    assert run.training_run_id == run_id
    sampler = service_client.create_sampling_client(model_path=sampler_path).result()
    out = sampler.sample(
        prompt=types.ModelInput.from_ints([1, 2, 3]),
        num_samples=1,
        sampling_params=types.SamplingParams(max_tokens=3, stop=[]),
    ).result()
    assert len(out.sequences[0].tokens) == 3 and out.sequences[0].stop_reason == "length"


def test_unknown_base_model_is_a_clear_user_error(service_client: tinker.ServiceClient) -> None:
    with pytest.raises(tinker.BadRequestError, match="unknown base model 'no/such-model'") as err:
        service_client.create_lora_training_client(base_model="no/such-model", rank=4).result()
    assert "built-in models (rlv/tiny-chat" in str(err.value)


def test_unknown_loss_is_a_clear_user_error(service_client: tinker.ServiceClient) -> None:
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2]),
        loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0]},
    )
    with pytest.raises(tinker.BadRequestError, match="nope"):  # refused before it is queued
        training.forward_backward([datum], "nope").result()
    # the model still works afterwards
    assert training.forward([datum], "cross_entropy").result().loss_fn_outputs


def test_malformed_body_is_rejected_with_json(server: LocalServer) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{server.url}/api/v1/forward_backward",
        data=b"\xff\x00garbage",
        method="POST",
        headers={"Content-Type": "application/x-protobuf"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert b"error" in caught.value.read()


def test_client_killed_mid_future_leaves_server_serving(
    server: LocalServer, service_client: tinker.ServiceClient
) -> None:
    script = (
        "import tinker; from tinker import types\n"
        "tc = tinker.ServiceClient().create_lora_training_client(\n"
        "    base_model='rlv/tiny-chat', rank=4).result()\n"
        "s = tc.save_weights_and_get_sampling_client().result()\n"
        "print('ready', flush=True)\n"
        "s.sample(prompt=types.ModelInput.from_ints([1,2,3]), num_samples=64,"
        " sampling_params=types.SamplingParams(max_tokens=200, stop=[])).result()\n"
    )
    env = dict(os.environ, TINKER_BASE_URL=server.url, TINKER_API_KEY="tml-local")
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"ready"
    time.sleep(1.0)
    child.kill()
    child.wait()
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    out = training.forward(
        [
            types.Datum(
                model_input=types.ModelInput.from_ints([1, 2]),
                loss_fn_inputs={"target_tokens": [2, 3], "weights": [1.0, 1.0]},
            )
        ],
        "cross_entropy",
    ).result(timeout=120)
    assert len(out.loss_fn_outputs) == 1


def test_taken_port_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "rl_verifier_server",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path),
                "--preload",
                "",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.close()
    assert result.returncode != 0
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_concurrent_clients_are_served(service_client: tinker.ServiceClient) -> None:
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            training = service_client.create_lora_training_client(
                base_model=MODEL, rank=4, seed=seed
            ).result()
            sampler = training.save_weights_and_get_sampling_client().result()
            out = sampler.sample(
                prompt=types.ModelInput.from_ints([1, 2, 3]),
                num_samples=2,
                sampling_params=types.SamplingParams(max_tokens=4, seed=seed),
            ).result()
            assert len(out.sequences) == 2
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
