"""Adapter checkpoints on disk.

A checkpoint directory holds:

* ``adapter_model.safetensors`` and ``adapter_config.json``: a standard peft LoRA adapter
  (``PeftModel.from_pretrained(base, directory)`` loads it);
* ``rlv_adapter.json``: kind (training or sampler), base model name, LoraSpec, alpha,
  target modules, optimizer step count;
* ``optimizer.safetensors`` (training checkpoints saved with the optimizer): AdamW's
  ``step``, ``exp_avg`` and ``exp_avg_sq`` per parameter, keyed ``<param>::<field>``.

Writes are atomic: everything goes to a hidden sibling folder that is renamed into place
(replacing an older checkpoint of the same name). Other files the caller adds to the
directory afterwards are ignored on read.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from rl_verifier.errors import UserError
from rl_verifier_server.runtime.types import CheckpointInfo, LoraSpec
from rl_verifier_server.testhooks import pause_point

META_FILE = "rlv_adapter.json"
WEIGHTS_FILE = "adapter_model.safetensors"
OPTIMIZER_FILE = "optimizer.safetensors"
FORMAT_VERSION = 1


def write_checkpoint(
    directory: Path,
    info: CheckpointInfo,
    peft_config: Any,
    weights: dict[str, torch.Tensor],
    optimizer: dict[str, torch.Tensor] | None,
) -> None:
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = directory.parent / f".{directory.name}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        save_file(_cpu(weights), str(staging / WEIGHTS_FILE))
        pause_point("checkpoint.write")
        if optimizer is not None:
            save_file(_cpu(optimizer), str(staging / OPTIMIZER_FILE))
        peft_config.save_pretrained(str(staging))
        meta = {
            "format": FORMAT_VERSION,
            "kind": info.kind,
            "base_model": info.base_model,
            "lora": info.spec.to_json(),
            "lora_alpha": info.lora_alpha,
            "target_modules": list(info.target_modules),
            "step": info.step,
            "has_optimizer": optimizer is not None,
        }
        (staging / META_FILE).write_text(json.dumps(meta, indent=2))
        _swap_into_place(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _cpu(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: t.detach().to("cpu").contiguous() for key, t in tensors.items()}


def _swap_into_place(staging: Path, directory: Path) -> None:
    if not directory.exists():
        os.replace(staging, directory)
        return
    retired = directory.parent / f".{directory.name}.old-{uuid.uuid4().hex[:8]}"
    os.replace(directory, retired)
    os.replace(staging, directory)
    shutil.rmtree(retired, ignore_errors=True)


def read_checkpoint_info(directory: Path) -> CheckpointInfo:
    """The metadata of a checkpoint written by the runtime, or UserError."""
    meta_file = Path(directory) / META_FILE
    if not meta_file.is_file():
        raise UserError(f"no adapter checkpoint found at {directory}")
    try:
        meta = json.loads(meta_file.read_text())
        return CheckpointInfo(
            kind=str(meta["kind"]),
            base_model=str(meta["base_model"]),
            spec=LoraSpec.from_json(meta["lora"]),
            lora_alpha=float(meta["lora_alpha"]),
            target_modules=tuple(meta["target_modules"]),
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
