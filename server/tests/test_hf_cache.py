"""The built-in model by name for Hugging Face loaders: published into the local hub cache,
``AutoTokenizer`` / ``AutoModelForCausalLM.from_pretrained("rlv/tiny-chat")`` load it with
``HF_HUB_OFFLINE=1`` in a fresh process, and it is the same model ``rlv serve`` loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rl_verifier_server.models.catalog import resolve
from rl_verifier_server.models.hf_cache import publish
from rl_verifier_server.models.tiny_model import TINY_MODEL_NAME, ensure_tiny_model

LOAD_BY_NAME = """
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("rlv/tiny-chat")
model = AutoModelForCausalLM.from_pretrained("rlv/tiny-chat", dtype=torch.float32)
ids = tokenizer.apply_chat_template(
    [{"role": "user", "content": "Say yes."}], add_generation_prompt=True, tokenize=False
)
tokens = tokenizer.encode(ids, add_special_tokens=False)
with torch.no_grad():
    logits = model(input_ids=torch.tensor([tokens])).logits[0, -1]
json.dump({"tokens": tokens, "logit_sum": float(logits.sum())}, sys.stdout)
"""


def load_by_name(cache: Path) -> dict[str, object]:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD_BY_NAME], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_builtin_model_loads_by_name_offline(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    snapshot = publish(ensure_tiny_model(), TINY_MODEL_NAME, cache)
    by_name = load_by_name(cache)
    direct = subprocess.run(
        [sys.executable, "-c", LOAD_BY_NAME.replace('"rlv/tiny-chat"', repr(str(snapshot)))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert by_name == json.loads(direct.stdout)
    repo = cache / "models--rlv--tiny-chat"
    assert (repo / "refs" / "main").read_text() == snapshot.name


def test_a_changed_model_is_a_new_revision(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    first = publish(model, "org/name", tmp_path / "hub")
    assert publish(model, "org/name", tmp_path / "hub") == first  # unchanged: same snapshot
    (model / "config.json").write_text('{"changed": true}')
    second = publish(model, "org/name", tmp_path / "hub")
    assert second != first and first.is_dir()
    assert (tmp_path / "hub" / "models--org--name" / "refs" / "main").read_text() == second.name


def test_serving_the_builtin_model_publishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    source = resolve(TINY_MODEL_NAME)
    assert source.directory == ensure_tiny_model()
    assert (tmp_path / "hub" / "models--rlv--tiny-chat" / "refs" / "main").is_file()
