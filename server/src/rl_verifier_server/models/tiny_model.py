"""The built-in tiny causal LM ``rlv/tiny-chat``, built offline and cached on disk.

``rlv serve`` must work with no network at all (no model hub), so this module builds a
small Llama-architecture chat model from scratch:

* a byte-level BPE tokenizer trained with ``tokenizers`` on a small English corpus that ships
  with the package (``data/tiny_corpus.txt``) plus deterministically generated lines
  (arithmetic, yes/no questions, JSON), saved as a Hugging Face fast tokenizer with a
  ChatML chat template (``<|im_start|>role\\ncontent<|im_end|>\\n``);
* a randomly initialised ``LlamaForCausalLM`` (2 layers, hidden size 128, vocabulary 2048,
  about 1M parameters) whose weights come from fixed per-parameter seeds, saved as float32
  safetensors. Its modules carry the usual LoRA target names (``q_proj`` ... ``down_proj``,
  ``lm_head``). Llama rather than Qwen2 because transformers 5 loads any ``qwen2`` checkpoint
  with its own ``Qwen2Tokenizer`` pipeline (NFC normaliser), which ignores ``tokenizer.json``
  and breaks the exact byte-level round trip; for ``llama`` it loads ``tokenizer.json`` as is.

The build is deterministic (same library versions give byte-identical files), takes about
0.1 s once torch and transformers are imported (importing them is most of a cold build's
3-4 s), and is cached: :func:`ensure_tiny_model` returns
the cached directory without importing torch when it already exists (``model_cache``:
built aside, renamed into place under a file lock).

The model is untrained: it produces near-uniform next-token distributions. It exists so that
the whole training stack (sampling, LoRA forward/backward, optimiser steps, checkpoints) can
run end to end on a CPU in tests and examples.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from importlib import resources
from pathlib import Path
from typing import Any

from rl_verifier.internal import write_text
from rl_verifier_server.models.model_cache import MODEL_FILES, default_cache_dir, ensure_built

TINY_MODEL_NAME = "rlv/tiny-chat"
# Bump whenever the recipe below (corpus, tokenizer settings, architecture, init) changes, so
# that an old cached build is never mistaken for the new one.
TINY_MODEL_VERSION = "v1"

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)  # ids 0, 1, 2

VOCAB_SIZE = 2048
HIDDEN_SIZE = 128
INTERMEDIATE_SIZE = 512
NUM_LAYERS = 2
NUM_HEADS = 4
NUM_KV_HEADS = 2
MAX_POSITIONS = 2048
RMS_NORM_EPS = 1e-6
TIE_WORD_EMBEDDINGS = False
INIT_STD = 0.02
SEED = 20240517

# Same split as Qwen2's tokenizer: contractions, letter runs with one leading non-letter,
# single digits (so numbers tokenize digit by digit), punctuation runs, newlines, spaces.
PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}"
    "{{- message['content'] }}"
    "{%- else %}"
    "{%- for part in message['content'] %}"
    "{%- if part['type'] == 'text' %}{{- part['text'] }}{%- endif %}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

_CORPUS_RESOURCE = "tiny_corpus.txt"
_MANIFEST = "rlv_tiny_model.json"
_REQUIRED_FILES = (*MODEL_FILES, _MANIFEST)


# --------------------------------------------------------------------------------------------
# Public API


def tiny_model_dir(cache_dir: Path | None = None) -> Path:
    """Where :func:`ensure_tiny_model` keeps the model inside ``cache_dir``."""
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return base / f"tiny-chat-{TINY_MODEL_VERSION}"


def ensure_tiny_model(cache_dir: Path | None = None) -> Path:
    """Return a directory holding ``rlv/tiny-chat``, building it first if needed.

    ``cache_dir`` is the folder that holds cached models (default: :func:`default_cache_dir`);
    the model lives in ``cache_dir / "tiny-chat-<version>"``. The returned directory loads with
    ``AutoModelForCausalLM.from_pretrained(path, local_files_only=True)`` and
    ``AutoTokenizer.from_pretrained(path, local_files_only=True)``. A cached model is returned
    without importing torch or transformers.
    """
    return ensure_built(tiny_model_dir(cache_dir), _REQUIRED_FILES, build_tiny_model)


def describe_tiny_model() -> dict[str, Any]:
    """Size facts about ``rlv/tiny-chat`` (computed from the recipe, nothing is built)."""
    head_dim = HIDDEN_SIZE // NUM_HEADS
    kv_dim = NUM_KV_HEADS * head_dim
    attention = 2 * HIDDEN_SIZE * HIDDEN_SIZE + 2 * HIDDEN_SIZE * kv_dim  # q, o, k, v (no bias)
    mlp = 3 * HIDDEN_SIZE * INTERMEDIATE_SIZE
    per_layer = attention + mlp + 2 * HIDDEN_SIZE  # two RMSNorms
    embeddings = VOCAB_SIZE * HIDDEN_SIZE
    lm_head = 0 if TIE_WORD_EMBEDDINGS else VOCAB_SIZE * HIDDEN_SIZE
    num_parameters = embeddings + NUM_LAYERS * per_layer + HIDDEN_SIZE + lm_head
    return {
        "name": TINY_MODEL_NAME,
        "version": TINY_MODEL_VERSION,
        "architecture": "LlamaForCausalLM",
        "num_parameters": num_parameters,
        "vocab_size": VOCAB_SIZE,
        "num_layers": NUM_LAYERS,
        "hidden_size": HIDDEN_SIZE,
        "intermediate_size": INTERMEDIATE_SIZE,
        "num_attention_heads": NUM_HEADS,
        "num_key_value_heads": NUM_KV_HEADS,
        "max_position_embeddings": MAX_POSITIONS,
        "tie_word_embeddings": TIE_WORD_EMBEDDINGS,
        "dtype": "float32",
        "special_tokens": {tok: i for i, tok in enumerate(SPECIAL_TOKENS)},
    }


def build_tiny_model(out_dir: Path) -> None:
    """Write the tokenizer and model files into ``out_dir`` (which must exist).

    Most callers want :func:`ensure_tiny_model`, which caches the result.
    """
    out_dir = Path(out_dir)
    tokenizer = _train_tokenizer()
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    if vocab != VOCAB_SIZE:
        raise RuntimeError(f"tokenizer training gave {vocab} tokens, expected {VOCAB_SIZE}")
    for i, tok in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(tok) != i:
            raise RuntimeError(f"special token {tok!r} did not get id {i}")
    tokenizer.save(str(out_dir / "tokenizer.json"))
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config())
    _build_model(out_dir)
    manifest = {**describe_tiny_model(), "corpus_sha256": _corpus_sha256()}
    _write_json(out_dir / _MANIFEST, manifest)


# --------------------------------------------------------------------------------------------
# Tokenizer


def _bundled_corpus() -> str:
    return (
        resources.files(__package__ or "rl_verifier_server.models") / "data" / _CORPUS_RESOURCE
    ).read_text(encoding="utf-8")


def _corpus_sha256() -> str:
    text = _bundled_corpus() + "\n".join(_generated_corpus())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kofi")
_THINGS = ("apples", "books", "coins", "pencils", "stickers", "marbles", "cookies", "cards")
_CITIES = (
    ("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"),
    ("Egypt", "Cairo"), ("Canada", "Ottawa"), ("Kenya", "Nairobi"), ("Peru", "Lima"),
    ("Norway", "Oslo"), ("Chile", "Santiago"), ("India", "New Delhi"), ("Brazil", "Brasilia"),
)  # fmt: skip


def _generated_corpus() -> list[str]:
    """Deterministic templated lines: arithmetic, comparisons, yes/no, JSON, chat turns."""
    lines: list[str] = []
    for i in range(160):
        a = (i * 37 + 11) % 97
        b = (i * 53 + 7) % 41 + 1
        name = _NAMES[i % len(_NAMES)]
        things = _THINGS[i % len(_THINGS)]
        lines += [
            f"What is {a} + {b}? {a} + {b} = {a + b}. The answer is {a + b}.",
            f"What is {a} - {b}? {a} - {b} = {a - b}. The answer is {a - b}.",
            f"Compute {a} * {b}. Answer: {a * b}",
            f"{name} has {a} {things} and gets {b} more, so {name} has {a + b} {things}.",
            f"Is {a} greater than {b}? {'Yes' if a > b else 'No'}.",
            f"Is {a} even? {'yes' if a % 2 == 0 else 'no'}",
            f'{{"question": "{a} + {b}", "answer": {a + b}, "correct": true}}',
            f"user\nWhat is {b} times {i % 12 + 1}?\nassistant\n{b * (i % 12 + 1)}",
        ]
    for country, city in _CITIES:
        lines += [
            f"Q: What is the capital of {country}?\nA: The capital of {country} is {city}.",
            f'{{"country": "{country}", "capital": "{city}"}}',
            f"Is {city} the capital of {country}? Yes.",
        ]
    return lines


def _train_tokenizer() -> Any:
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    tokenizer = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=16,
    )
    texts = _bundled_corpus().split("\n\n") + _generated_corpus()
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tokenizer


def _tokenizer_config() -> dict[str, Any]:
    added = {
        str(i): {
            "content": tok,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, tok in enumerate(SPECIAL_TOKENS)
    }
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "additional_special_tokens": [IM_START, IM_END],
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "unk_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "model_max_length": MAX_POSITIONS,
        "split_special_tokens": False,
    }


# --------------------------------------------------------------------------------------------
# Model


def _build_model(out_dir: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    endoftext, im_end = SPECIAL_TOKENS.index(ENDOFTEXT), SPECIAL_TOKENS.index(IM_END)
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=HIDDEN_SIZE,
        intermediate_size=INTERMEDIATE_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_KV_HEADS,
        head_dim=HIDDEN_SIZE // NUM_HEADS,
        hidden_act="silu",
        max_position_embeddings=MAX_POSITIONS,
        rms_norm_eps=RMS_NORM_EPS,
        initializer_range=INIT_STD,
        tie_word_embeddings=TIE_WORD_EMBEDDINGS,
        attention_bias=False,
        mlp_bias=False,
        bos_token_id=None,
        eos_token_id=im_end,
        pad_token_id=endoftext,
        dtype="float32",
    )
    config.architectures = ["LlamaForCausalLM"]
    # Constructing the model draws from torch's global RNG; leave the caller's RNG untouched.
    with torch.random.fork_rng(devices=[]):
        model = LlamaForCausalLM(config)
    _init_weights(model)
    generation_config = GenerationConfig(
        bos_token_id=None,
        eos_token_id=[im_end, endoftext],
        pad_token_id=endoftext,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
    )
    config.save_pretrained(str(out_dir))
    generation_config.save_pretrained(str(out_dir))
    # Written directly rather than with model.save_pretrained: no progress bar, and the file
    # holds exactly these tensors in a fixed order.
    tensors = {k: v.detach().contiguous() for k, v in sorted(model.state_dict().items())}
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})


def _init_weights(model: Any) -> None:
    """Overwrite every parameter from a seed derived from its name (order-independent)."""
    import torch

    residual_std = INIT_STD / (2 * NUM_LAYERS) ** 0.5
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                residual = name.endswith(("o_proj.weight", "down_proj.weight"))
                std = residual_std if residual else INIT_STD
                gen = torch.Generator().manual_seed(SEED + zlib.crc32(name.encode()))
                values = torch.randn(param.shape, generator=gen, dtype=torch.float32) * std
                param.copy_(values)


# --------------------------------------------------------------------------------------------
# Files


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
