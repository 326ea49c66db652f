"""Tests for the built-in offline tiny model ``rlv/tiny-chat``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from rl_verifier_server.models import tiny_model
from rl_verifier_server.models.tiny_model import (
    TINY_MODEL_NAME,
    VOCAB_SIZE,
    describe_tiny_model,
    ensure_tiny_model,
    tiny_model_dir,
)

MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SRC_ROOT = Path(tiny_model.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_tiny_model(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> Any:
    return AutoTokenizer.from_pretrained(model_dir, local_files_only=True)


@pytest.fixture(scope="module")
def model(model_dir: Path) -> Any:
    return AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC_ROOT), env.get("PYTHONPATH")]))
    return env


def test_name_and_layout(model_dir: Path, tmp_path: Path) -> None:
    assert TINY_MODEL_NAME == "rlv/tiny-chat"
    assert model_dir.name.startswith("tiny-chat-")
    assert tiny_model_dir(tmp_path) == tmp_path / model_dir.name
    for name in MODEL_FILES:
        assert (model_dir / name).is_file(), name


def test_default_cache_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLV_CACHE_DIR", str(tmp_path))
    assert tiny_model_dir() == tmp_path / "models" / f"tiny-chat-{tiny_model.TINY_MODEL_VERSION}"
    monkeypatch.delenv("RLV_CACHE_DIR")
    assert tiny_model.default_cache_dir() == Path.home() / ".cache" / "rl-verifier" / "models"


def test_loads_offline_and_runs_forward(tokenizer: Any, model: Any) -> None:
    ids = tokenizer("What is 2 + 3? The answer is 5.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], VOCAB_SIZE)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    assert len(tokenizer) == model.config.vocab_size == VOCAB_SIZE


def test_module_names_and_description(model: Any) -> None:
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    assert set(LORA_TARGETS) | {"lm_head"} <= names
    info = describe_tiny_model()
    assert info["num_parameters"] == sum(p.numel() for p in model.parameters())
    assert info["vocab_size"] == model.config.vocab_size
    assert info["num_layers"] == model.config.num_hidden_layers
    assert info["hidden_size"] == model.config.hidden_size
    assert next(model.parameters()).dtype == torch.float32


def test_build_is_deterministic(model_dir: Path, tmp_path: Path) -> None:
    other = ensure_tiny_model(tmp_path)
    assert other != model_dir
    for name in (*MODEL_FILES, "rlv_tiny_model.json"):
        assert (other / name).read_bytes() == (model_dir / name).read_bytes(), name


def test_second_call_is_cached(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {name: (model_dir / name).stat().st_mtime_ns for name in MODEL_FILES}

    def must_not_build(path: Path) -> None:
        raise AssertionError(f"rebuilt a cached model into {path}")

    monkeypatch.setattr(tiny_model, "build_tiny_model", must_not_build)
    again = ensure_tiny_model(model_dir.parent)
    assert again == model_dir
    assert {name: (model_dir / name).stat().st_mtime_ns for name in MODEL_FILES} == before


def test_cached_call_does_not_import_torch(model_dir: Path) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from rl_verifier_server.models.tiny_model import ensure_tiny_model\n"
        f"ensure_tiny_model(Path({str(model_dir.parent)!r}))\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_child_env(), timeout=60)


def test_incomplete_directory_is_rebuilt(model_dir: Path, tmp_path: Path) -> None:
    target = tiny_model_dir(tmp_path)
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    (tmp_path / f".{target.name}.tmp-stale").mkdir()  # left by a killed build
    assert ensure_tiny_model(tmp_path) == target
    assert (target / "model.safetensors").read_bytes() == (
        model_dir / "model.safetensors"
    ).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{target.name}.lock", target.name]


def test_chat_template(tokenizer: Any) -> None:
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert [im_start, im_end, im_start] == [i for i in ids if i in (im_start, im_end)]
    assert ids[0] == im_start and ids[-3] == im_start
    assert tokenizer.decode(ids) == text

    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
        {"role": "assistant", "content": "4"},
    ]
    assert tokenizer.apply_chat_template(conversation, tokenize=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\n2+2?<|im_end|>\n"
        "<|im_start|>assistant\n4<|im_end|>\n"
    )


def test_special_tokens(tokenizer: Any, model: Any) -> None:
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.bos_token is None
    assert (
        tokenizer("hello")["input_ids"] == tokenizer("hello", add_special_tokens=False)["input_ids"]
    )
    eos_ids = model.generation_config.eos_token_id
    assert {im_end, endoftext} <= set(eos_ids if isinstance(eos_ids, list) else [eos_ids])
    text = "<|im_start|>user\nhi<|im_end|>"
    assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == "user\nhi"


@pytest.mark.parametrize(
    "text",
    [
        "Hello, world! 123 + 456 = 579",
        "日本語のテキストと中文，한국어",
        "emoji 🙂👍🏽🚀 and flags 🇫🇷 and a ZWJ family 👨‍👩‍👧",
        "decomposed a\u0301 vs composed \u00e1, NBSP\u00a0, tab\t, CRLF\r\n, NUL\x00",
        '  leading spaces, {"json": [1, 2.5, null]}\n\n  def f(x):\n\treturn x  ',
        "",
    ],
)
def test_unicode_round_trip(tokenizer: Any, text: str) -> None:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert max(ids, default=0) < VOCAB_SIZE


def test_concurrent_builds_share_one_model(model_dir: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    cache = tmp_path / "cache"
    code = (
        "import sys, time; from pathlib import Path\n"
        "import torch, transformers, tokenizers, safetensors.torch\n"
        "from transformers import LlamaForCausalLM\n"
        "from rl_verifier_server.models.tiny_model import ensure_tiny_model\n"
        "print('ready', flush=True)\n"
        f"while not Path({str(go)!r}).exists(): time.sleep(0.005)\n"
        f"print(ensure_tiny_model(Path({str(cache)!r})), flush=True)\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_child_env(),
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:  # both have imported everything: release them together
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        go.touch()
        results = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == str(tiny_model_dir(cache))
    target = tiny_model_dir(cache)
    assert sorted(p.name for p in cache.iterdir()) == [f".{target.name}.lock", target.name]
    for name in MODEL_FILES:
        assert (target / name).read_bytes() == (model_dir / name).read_bytes(), name
    loaded = AutoModelForCausalLM.from_pretrained(target, local_files_only=True)
    assert loaded.config.vocab_size == VOCAB_SIZE
