"""An adapter folder on disk: the tensors of one LoRA adapter, saved and read back.

A folder holds:

* ``adapter_model.safetensors`` and ``adapter_config.json``: a standard peft LoRA adapter
  (``PeftModel.from_pretrained(base, folder)`` loads it);
* ``rlv_adapter.json``: kind (training or sampler), base model name, LoraSpec, alpha,
  target modules, optimizer step count;
* ``optimizer.safetensors`` (training adapters saved with the optimizer): AdamW's
  ``step``, ``exp_avg`` and ``exp_avg_sq`` per parameter, keyed ``<param>::<field>``.

Writes are atomic: everything goes to a hidden sibling folder that replaces the target
folder whole (``rl_verifier.publish_directory`` with ``replace=True``). Other files the
caller adds to the folder afterwards are ignored on read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from rl_verifier import UserError, publish_directory
from rl_verifier.internal import write_text
from rl_verifier_server.base.testhooks import pause_point
from rl_verifier_server.runtime.types import AdapterInfo, AdapterLayout, LoraSpec

META_FILE = "rlv_adapter.json"
WEIGHTS_FILE = "adapter_model.safetensors"
OPTIMIZER_FILE = "optimizer.safetensors"
FORMAT_VERSION = 1


def write_adapter(
    directory: Path,
    info: AdapterInfo,
    peft_config: Any,
    weights: dict[str, torch.Tensor],
    optimizer: dict[str, torch.Tensor] | None,
) -> None:
    with publish_directory(Path(directory), replace=True) as staging:
        save_file(_cpu(weights), str(staging / WEIGHTS_FILE))
        pause_point("checkpoint.write")
        if optimizer is not None:
            save_file(_cpu(optimizer), str(staging / OPTIMIZER_FILE))
        peft_config.save_pretrained(str(staging))
        meta = {
            "format": FORMAT_VERSION,
            "kind": info.kind,
            "base_model": info.base_model,
            "lora": info.layout.spec.to_json(),
            "lora_alpha": info.layout.alpha,
            "target_modules": list(info.layout.targets),
            "step": info.step,
            "has_optimizer": optimizer is not None,
        }
        write_text(staging / META_FILE, json.dumps(meta, indent=2))


def _cpu(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: t.detach().to("cpu").contiguous() for key, t in tensors.items()}


def read_adapter_info(directory: Path) -> AdapterInfo:
    """The metadata of an adapter folder written by the runtime, or a UserError."""
    meta_file = Path(directory) / META_FILE
    if not meta_file.is_file():
        raise UserError(f"no adapter checkpoint found at {directory}")
    try:
        meta = json.loads(meta_file.read_text())
        layout = AdapterLayout(
            spec=LoraSpec.from_json(meta["lora"]),
            alpha=float(meta["lora_alpha"]),
            targets=tuple(meta["target_modules"]),
        )
        return AdapterInfo(
            kind=str(meta["kind"]),
            base_model=str(meta["base_model"]),
            layout=layout,
            step=int(meta["step"]),
            has_optimizer=bool(meta["has_optimizer"]),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"adapter checkpoint at {directory} is unreadable: {error}") from None


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = load_file(str(Path(directory) / WEIGHTS_FILE))
    return tensors


def read_optimizer(directory: Path) -> dict[str, torch.Tensor]:
    path = Path(directory) / OPTIMIZER_FILE
    if not path.is_file():
        raise UserError(f"checkpoint at {directory} has no optimizer state")
    tensors: dict[str, torch.Tensor] = load_file(str(path))
    return tensors
