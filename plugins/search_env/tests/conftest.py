"""Shared fixtures: the renderer of the built-in tiny-chat model's tokenizer."""

from __future__ import annotations

import pytest

from rl_verifier.train import Renderer


@pytest.fixture(scope="session")
def renderer() -> Renderer:
    transformers = pytest.importorskip("transformers")
    tiny_model = pytest.importorskip("rl_verifier_server.models.tiny_model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        tiny_model.ensure_tiny_model(), local_files_only=True
    )
    return Renderer(tokenizer)
