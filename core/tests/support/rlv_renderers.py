"""The cookbook renderer named for a built-in model, checked against the model's own chat
template on one conversation with a system message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "And 4 + 4?"},
]


def assert_renderer_matches_template(model_dir: Path, renderer_name: str) -> tuple[Any, str]:
    """Assert the renderer's generation prompt is the template's, token for token, and that
    it stops at ``<|im_end|>``; the tokenizer and the template's text, for more checks."""
    from tinker_cookbook import renderers
    from tinker_cookbook.tokenizer_utils import get_tokenizer

    tokenizer = get_tokenizer(str(model_dir))
    renderer = renderers.get_renderer(renderer_name, tokenizer)
    convo: list[renderers.Message] = [dict(m) for m in CONVERSATION]  # type: ignore[misc]
    text = tokenizer.apply_chat_template(convo, add_generation_prompt=True, tokenize=False)
    prompt = renderer.build_generation_prompt(convo).to_ints()
    assert prompt == tokenizer.encode(text, add_special_tokens=False)
    assert renderer.get_stop_sequences() == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    return tokenizer, text
