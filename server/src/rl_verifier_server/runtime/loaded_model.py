"""One base model loaded once: the facts requests are checked against, and its adapters."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch
import transformers
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer

from rl_verifier_server.runtime import adapter_files
from rl_verifier_server.runtime.lora import AdapterSet, LayerMap
from rl_verifier_server.runtime.types import AdapterInfo, AdapterLayout


class LoadedModel:
    """A frozen causal LM with its tokenizer, and the peft adapters living on it.

    ``adapters`` routes every forward through one adapter (or none); callers activate the
    one they need before calling ``model``.
    """

    def __init__(
        self, model: nn.Module, tokenizer: Any, name: str, max_context: int | None = None
    ) -> None:
        param = next(model.parameters())
        self.name = name
        self.tokenizer = tokenizer
        self.device = str(param.device)
        self.dtype = param.dtype
        model.eval()
        model.requires_grad_(False)
        self.model = model
        hf_model: Any = model  # a transformers PreTrainedModel
        rows = [hf_model.get_input_embeddings().weight.shape[0]]
        embed_out = hf_model.get_output_embeddings()
        if embed_out is not None:
            rows.append(embed_out.weight.shape[0])
        self.vocab_size = int(min(rows))
        config = model.config
        self.max_context = int(
            max_context or getattr(config, "max_position_embeddings", None) or 4096
        )
        self.eos_token_ids = _eos_ids(model, tokenizer)
        self.layers = LayerMap.of(model)  # before peft wraps any layer
        self.adapters = AdapterSet(model)
        forward_args = inspect.signature(model.forward).parameters
        self.logits_to_keep = "logits_to_keep" in forward_args
        self.cache_arg = "cache" if "cache" in forward_args else "past_key_values"

    def save_adapter(
        self,
        lora: str,
        layout: AdapterLayout,
        kind: str,
        directory: Path,
        step: int = 0,
        optimizer_state: dict[str, torch.Tensor] | None = None,
    ) -> None:
        """Write adapter ``lora``'s weights (and optimizer state) as an adapter folder."""
        info = AdapterInfo(kind, self.name, layout, step, optimizer_state is not None)
        weights = {k: p.detach() for k, p in self.adapters.params(lora).items()}
        config = self.adapters.config(lora)
        adapter_files.write_adapter(Path(directory), info, config, weights, optimizer_state)


def load_pretrained(model_dir: Path, device: str | None = None) -> tuple[Any, Any]:
    """A HF causal LM and its tokenizer. device None: cuda when available, else cpu;
    bf16 on cuda, fp32 on cpu."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    # transformers < 4.56 calls the argument torch_dtype
    dtype_arg = "dtype" if _version_at_least(transformers.__version__, 4, 56) else "torch_dtype"
    model: Any = AutoModelForCausalLM.from_pretrained(str(model_dir), **{dtype_arg: dtype})
    model.to(device)
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def _eos_ids(model: nn.Module, tokenizer: Any) -> tuple[int, ...]:
    ids: set[int] = set()
    generation = getattr(model, "generation_config", None)
    for value in (getattr(generation, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list | tuple):
            ids.update(int(v) for v in value)
    return tuple(sorted(ids))


def _version_at_least(version: str, major: int, minor: int) -> bool:
    parts = [int("".join(c for c in p if c.isdigit()) or 0) for p in version.split(".")[:2]]
    return [*parts, 0, 0][:2] >= [major, minor]
