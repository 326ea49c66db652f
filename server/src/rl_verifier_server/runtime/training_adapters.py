"""Training adapters: LoRA weights with their AdamW state, stepped, saved and restored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from rl_verifier import UserError
from rl_verifier_server.runtime import adapter_files, optim
from rl_verifier_server.runtime.loaded_model import LoadedModel
from rl_verifier_server.runtime.lora import DEFAULT_LORA_ALPHA, lora_config
from rl_verifier_server.runtime.types import AdamParams, AdapterInfo, AdapterLayout, LoraSpec


@dataclass
class AdapterTrainer:
    """One training adapter: its peft adapter, layout, optimizer and step count."""

    lora: str  # internal peft adapter name
    layout: AdapterLayout
    optimizer: torch.optim.AdamW
    step: int = 0


class TrainingAdapters:
    """The training adapters on one model, by the caller's adapter id."""

    def __init__(self, base: LoadedModel, lora_alpha: float = DEFAULT_LORA_ALPHA) -> None:
        self.base = base
        self.lora_alpha = float(lora_alpha)
        self._items: dict[str, AdapterTrainer] = {}

    def create(self, adapter_id: str, spec: LoraSpec) -> None:
        """A fresh LoRA adapter (B = 0, so outputs equal the base model's), seeded by spec.seed."""
        self._check_free(adapter_id)
        spec.validate()
        targets = tuple(self.base.layers.targets(spec))
        self._add(adapter_id, AdapterLayout(spec, self.lora_alpha, targets))

    def create_from_state(self, adapter_id: str, directory: Path, with_optimizer: bool) -> LoraSpec:
        """A new training adapter restored exactly from a ``save_state`` folder."""
        self._check_free(adapter_id)
        info = _read(directory, with_optimizer)
        trainer = self._add(adapter_id, info.layout)
        try:
            self._restore(trainer, directory, info, with_optimizer)
        except BaseException:
            self.drop(adapter_id)
            raise
        return info.layout.spec

    def get(self, adapter_id: str) -> AdapterTrainer:
        trainer = self._items.get(adapter_id)
        if trainer is None:
            raise UserError(f"unknown training adapter '{adapter_id}'")
        return trainer

    def has(self, adapter_id: str) -> bool:
        return adapter_id in self._items

    def parameters(self, adapter_id: str) -> dict[str, nn.Parameter]:
        """The live LoRA parameters of a training adapter, by peft checkpoint key."""
        return self.base.adapters.params(self.get(adapter_id).lora)

    def step(self, adapter_id: str) -> int:
        """How many optimizer steps the adapter has taken (restored by checkpoints)."""
        return self.get(adapter_id).step

    def drop(self, adapter_id: str) -> None:
        trainer = self.get(adapter_id)
        trainer.optimizer.state.clear()
        self.base.adapters.remove(trainer.lora)
        del self._items[adapter_id]

    def optim_step(self, adapter_id: str, adam: AdamParams) -> dict[str, float]:
        """One AdamW step (torch semantics, decoupled weight decay) on the accumulated grads,
        which are then cleared. Without any accumulated grads nothing changes."""
        trainer = self.get(adapter_id)
        adam.check()
        params = self.base.adapters.params(trainer.lora)
        norm, stepped = optim.adamw_step(trainer.optimizer, params, adam)
        trainer.step += int(stepped)
        return {"grad_norm:mean": norm, "learning_rate:mean": float(adam.learning_rate)}

    def save_state(self, adapter_id: str, directory: Path, with_optimizer: bool = True) -> None:
        """Adapter weights, LoraSpec, optimizer state and step count, written atomically."""
        trainer = self.get(adapter_id)
        params = self.base.adapters.params(trainer.lora)
        state = optim.optimizer_tensors(trainer.optimizer, params) if with_optimizer else None
        self.base.save_adapter(
            trainer.lora, trainer.layout, "training", directory, trainer.step, state
        )

    def load_state(self, adapter_id: str, directory: Path, with_optimizer: bool) -> None:
        """Overwrite an existing adapter's weights (and Adam state, else a fresh optimizer)."""
        trainer = self.get(adapter_id)
        info = _read(directory, with_optimizer)
        theirs, ours = info.layout, trainer.layout
        if not theirs.matches(ours):
            raise UserError(
                f"checkpoint at {directory} has LoRA rank {theirs.spec.rank} (alpha "
                f"{theirs.alpha:g}) on {list(theirs.targets)}; this training client has "
                f"rank {ours.spec.rank} (alpha {ours.alpha:g}) on {list(ours.targets)}"
            )
        self._restore(trainer, directory, info, with_optimizer)

    def _check_free(self, adapter_id: str) -> None:
        if adapter_id in self._items:
            raise UserError(f"training adapter '{adapter_id}' already exists")

    def _add(self, adapter_id: str, layout: AdapterLayout) -> AdapterTrainer:
        lora = self.base.adapters.add(lora_config(layout), layout.spec.seed)
        optimizer = optim.new_optimizer(self.base.adapters.params(lora))
        trainer = self._items[adapter_id] = AdapterTrainer(lora, layout, optimizer)
        return trainer

    def _restore(
        self, trainer: AdapterTrainer, directory: Path, info: AdapterInfo, with_optimizer: bool
    ) -> None:
        params = self.base.adapters.params(trainer.lora)
        origin = f"checkpoint at {directory}"
        weights = adapter_files.read_weights(directory)
        self.base.adapters.load_weights(trainer.lora, weights, origin)
        for param in params.values():
            param.grad = None
        trainer.optimizer = optim.new_optimizer(params)
        if with_optimizer:
            state = adapter_files.read_optimizer(directory)
            optim.restore_optimizer(trainer.optimizer, params, state, origin)
        trainer.step = info.step


def _read(directory: Path, with_optimizer: bool) -> AdapterInfo:
    # The recorded base_model name is not compared with this model's name: one model is
    # often known by several names (hub id, local path). Every tensor's name and shape is
    # checked on load instead, which refuses checkpoints of other architectures.
    info = adapter_files.read_adapter_info(Path(directory))
    if with_optimizer and not info.has_optimizer:
        raise UserError(f"checkpoint at {directory} has no optimizer state")
    return info
