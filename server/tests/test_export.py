"""Trained weights you can take away: ``save_weights_external`` and its signed URLs, the
cookbook's ``weights.download``, and ``rlv export``, each giving a standard peft adapter that
plain ``peft`` loads onto ``rlv/tiny-chat`` to reproduce the server's logprobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tinker
from rlv_numerics import float32_tolerance
from tinker import types

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models.tiny_model import VOCAB_SIZE

KEY = "tml-export-test"
SEQUENCE = [1, 20, 30, 40, 2, 1, 50, 60, 70, 80, 90, 2]

# Plain transformers + peft, as a user would load the download: the base model by name
# (offline, from the Hugging Face cache) and each adapter folder onto a fresh copy of it
# ("" for none); prints each one's logprobs of the sequence.
PEFT_LOGPROBS = """
import json, sys, torch
from peft import PeftModel
from transformers import AutoModelForCausalLM
tokens, adapters = json.loads(sys.argv[1]), sys.argv[2:]
results = []
for adapter in adapters:
    model = AutoModelForCausalLM.from_pretrained("rlv/tiny-chat", dtype=torch.float32)
    if adapter:
        model = PeftModel.from_pretrained(model, adapter)
    with torch.no_grad():
        logits = model.eval()(input_ids=torch.tensor([tokens[:-1]])).logits[0]
    logprobs = torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens[1:])[:, None])
    results.append(logprobs[:, 0].tolist())
json.dump(results, sys.stdout)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("export") / "data"
    hub = data.parent / "hub"
    env = {"HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    log = data.parent / "server.log"
    with (
        LocalServer(data, log_path=log, extra_args=["--api-key", KEY], env=env) as running,
        pytest.MonkeyPatch.context() as patch,
    ):
        for name, value in {**env, "TINKER_BASE_URL": running.url, "TINKER_API_KEY": KEY}.items():
            patch.setenv(name, value)
        yield running


@pytest.fixture(scope="module")
def trained(server: LocalServer) -> Iterator[tuple[tinker.TrainingClient, np.ndarray]]:
    """A client trained a few steps, and the logprobs the server gives SEQUENCE with it."""
    with tinker.ServiceClient() as service:
        training = service.create_lora_training_client("rlv/tiny-chat", rank=4, seed=0).result()
        datum = types.Datum(
            model_input=types.ModelInput.from_ints(SEQUENCE[:-1]),
            loss_fn_inputs={"target_tokens": SEQUENCE[1:], "weights": [1.0] * 11},
        )
        for _ in range(3):
            training.forward_backward([datum], "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=3e-2)).result()
        out = training.forward([datum], "cross_entropy").result()
        yield training, out.loss_fn_outputs[0]["logprobs"].to_numpy()


def peft_logprobs(*adapters: Path | None) -> list[np.ndarray]:
    """Logprobs of SEQUENCE with each adapter loaded by plain peft (None: the base model)."""
    folders = [str(a) if a is not None else "" for a in adapters]
    done = subprocess.run(
        [sys.executable, "-c", PEFT_LOGPROBS, json.dumps(SEQUENCE), *folders],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    return [np.array(values) for values in json.loads(done.stdout)]


def agreement(served: np.ndarray) -> float:
    """The largest |logprob difference| accepted between the server and plain peft, which
    sum the vocabulary's float32 terms in other orders (logsumexp against log_softmax, in
    other processes): about 9e-3 here. Exporting the checkpoint of one step earlier moves
    these logprobs by 2.6; the base model's are 6.5 away."""
    return float32_tolerance(served, VOCAB_SIZE)


def fetch(url: str, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=60) as response:  # no API key: the URL is signed
        (folder / name).write_bytes(response.read())


@pytest.mark.slow
def test_an_export_downloads_as_a_peft_adapter_that_reproduces_the_server(
    server: LocalServer, trained: tuple[tinker.TrainingClient, np.ndarray], tmp_path: Path
) -> None:
    training, served = trained
    path = training.save_weights_external("final").result().path
    assert path == f"tinker://{training.model_id}/external_weights/final"
    rest = tinker.RestClient(base_url=server.url, api_key=KEY)
    signed = rest.get_external_weights_urls(path).result()
    assert sorted(signed.urls) == ["adapter_config.json", "adapter_model.safetensors"]
    for name, url in signed.urls.items():
        fetch(url, tmp_path / "adapter", name)
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "rlv/tiny-chat" and config["r"] == 4

    local, base = peft_logprobs(tmp_path / "adapter", None)
    assert np.abs(local - served).max() < agreement(served)
    assert np.abs(base - served).max() > 1.0  # training changed the model

    tampered = signed.urls["adapter_model.safetensors"].replace("signature=", "signature=0")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(tampered, timeout=60)
    assert refused.value.code == 403
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(tampered.split("?")[0], timeout=60)
    assert unsigned.value.code == 403


def test_the_cookbook_downloads_a_training_checkpoint(
    server: LocalServer, trained: tuple[tinker.TrainingClient, np.ndarray], tmp_path: Path
) -> None:
    """``weights.download`` of a save_state path: a temporary export encrypted to a fresh
    age key, downloaded, decrypted, then deleted."""
    from tinker_cookbook import weights

    training, served = trained
    rest = tinker.RestClient(base_url=server.url, api_key=KEY)  # not from the environment:

    def exports() -> list[str]:  # the SDK caches that client
        listed = rest.list_user_checkpoints().result().checkpoints
        return [c.tinker_path for c in listed if c.checkpoint_type == "external"]

    before = exports()  # other tests' exports, in whatever order the tests ran
    state = training.save_state("for-download").result().path
    weights.download(tinker_path=state, output_dir=str(tmp_path / "adapter"))
    assert sorted(p.name for p in (tmp_path / "adapter").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    [downloaded] = peft_logprobs(tmp_path / "adapter")
    assert np.abs(downloaded - served).max() < agreement(served)
    assert exports() == before  # the cookbook's temporary export is gone


def rlv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rl_verifier", *args], capture_output=True, text=True
    )


@pytest.mark.slow
def test_rlv_export_writes_the_same_adapter_without_the_sdk(
    server: LocalServer, trained: tuple[tinker.TrainingClient, np.ndarray], tmp_path: Path
) -> None:
    training, served = trained
    state = training.save_state("for-rlv-export").result().path
    data = ["--data-dir", str(server.data_dir)]
    done = rlv("export", state, "--out", str(tmp_path / "a"), *data)
    assert done.returncode == 0, done.stderr
    assert "LoRA rank 4 on rlv/tiny-chat" in done.stdout
    [exported] = peft_logprobs(tmp_path / "a")
    assert np.abs(exported - served).max() < agreement(served)

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = [{"step": 2, "path": state.replace("for-rlv-export", "gone"), "kind": "state"}]
    rows.append({"step": 3, "path": state, "kind": "state"})
    (run_dir / "checkpoints.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = rlv("export", str(run_dir), "--out", str(tmp_path / "b"), *data)
    assert done.returncode == 0, done.stderr
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    again = rlv("export", state, "--out", str(tmp_path / "a"), *data)
    assert again.returncode == 2 and "not empty; pass --force" in again.stderr
    missing = rlv("export", state + "x", "--out", str(tmp_path / "c"), *data)
    assert missing.returncode == 2 and "no checkpoint" in missing.stderr
    assert again.stderr.count("\n") == missing.stderr.count("\n") == 1  # one line each
