"""Which layers a LoraSpec trains, and the peft bookkeeping for many adapters on one model.

Every adapter lives in one ``PeftModel`` under an internal name (``rlv0``, ``rlv1``, ...),
so caller ids never reach peft (they may hold ``:`` or ``.``). Parameters are exposed under
their peft checkpoint names (``base_model.model.<module>.lora_A.weight``), which is also
the key format of ``adapter_model.safetensors``.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn

from rl_verifier import UserError
from rl_verifier_server.runtime.types import AdapterLayout, LoraSpec

ATTN_LEAVES = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_LEAVES = ("gate_proj", "up_proj", "down_proj")
_ATTN_HINTS = ("attn", "attention")
_MLP_HINTS = ("mlp", "ffn", "feed_forward", "feedforward")
_NEVER = ("gate", "router")  # MoE routers: leave them alone
PEFT_PREFIX = "base_model.model."

# Tinker-like: a fixed alpha makes the best learning rate roughly independent of the rank
# (scaling = alpha / rank), as in "LoRA Without Regret".
DEFAULT_LORA_ALPHA = 32.0
SEED_MASK = 2**64 - 1  # any int seed works; torch takes 64 bits


def _kind(name: str) -> str | None:
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ATTN_LEAVES:
        return "attn"
    if leaf in MLP_LEAVES:
        return "mlp"
    if leaf in _NEVER:
        return None
    path = [part.lower() for part in name.split(".")[:-1]]
    if any(hint in part for part in path for hint in _ATTN_HINTS):
        return "attn"
    if any(hint in part for part in path for hint in _MLP_HINTS):
        return "mlp"
    return None


@dataclass(frozen=True)
class LayerMap:
    """The base model's plain linear layers, recorded before peft wraps any of them."""

    linears: tuple[str, ...]
    unembed: str | None  # the output projection, when it is an nn.Linear

    @classmethod
    def of(cls, model: nn.Module) -> LayerMap:
        hf_model: Any = model  # a transformers PreTrainedModel
        out = hf_model.get_output_embeddings()
        names = {id(m): n for n, m in model.named_modules()}
        linears = tuple(
            n for n, m in model.named_modules() if isinstance(m, nn.Linear) and m is not out
        )
        return cls(linears, names.get(id(out)) if isinstance(out, nn.Linear) else None)

    def targets(self, spec: LoraSpec) -> list[str]:
        """peft ``target_modules`` for ``spec``: leaf names where unambiguous, else full names."""
        kinds = {k for k, on in (("attn", spec.train_attn), ("mlp", spec.train_mlp)) if on}
        wanted = [name for name in self.linears if _kind(name) in kinds]
        leaves = {name.rsplit(".", 1)[-1] for name in wanted}
        owners = {name for name in self.linears if name.rsplit(".", 1)[-1] in leaves}
        targets = sorted(leaves) if owners == set(wanted) else wanted
        if spec.train_unembed:
            if self.unembed is None:
                raise UserError(
                    "train_unembed is not supported: this model's output layer is not linear"
                )
            targets.append(self.unembed)
        if not targets:
            raise UserError(
                "this model has no layers for the requested train_attn/train_mlp/train_unembed"
            )
        return targets


def lora_config(layout: AdapterLayout) -> LoraConfig:
    """The peft config of an adapter of that layout (dropout 0, no bias)."""
    options: dict[str, Any] = {"lora_alpha": layout.alpha}  # peft annotates int; floats work
    return LoraConfig(
        r=layout.spec.rank,
        target_modules=list(layout.targets),
        lora_dropout=0.0,
        bias="none",
        **options,
    )


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run peft's init under ``seed`` without touching the process-wide CPU generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(secrets.randbits(63) if seed is None else int(seed) & SEED_MASK)
        yield


@contextmanager
def _quiet() -> Iterator[None]:
    """Hide two warnings that peft/transformers emit on every add/delete and that say
    nothing actionable here (we always set the active adapter explicitly)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing")
        warnings.filterwarnings("ignore", message=r"Adapter .* was active which is now deleted")
        yield


class AdapterSet:
    """One model, many named LoRA adapters; only one (or none) active at a time."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.peft: PeftModel | None = None
        self._counter = 0
        self._active: tuple[str | None, bool] | None = None
        self._params: dict[str, dict[str, nn.Parameter]] = {}

    def add(self, config: LoraConfig, seed: int | None) -> str:
        name = f"rlv{self._counter}"
        self._counter += 1
        try:
            with seeded(seed), _quiet():
                if self.peft is None:
                    self.peft = get_peft_model(self.model, config, adapter_name=name)
                else:
                    self.peft.add_adapter(name, config)
        except ValueError as error:  # e.g. a checkpoint's target modules are not in this model
            raise UserError(f"cannot create the LoRA adapter: {error}") from None
        marker = f".{name}."
        self._params[name] = {
            PEFT_PREFIX + key.replace(marker, "."): param
            for key, param in self.model.named_parameters()
            if marker in key
        }
        for param in self._params[name].values():
            param.requires_grad_(False)
        self._active = None
        return name

    def remove(self, name: str) -> None:
        assert self.peft is not None
        with _quiet():
            self.peft.delete_adapter(name)
        del self._params[name]
        self._active = None

    def config(self, name: str) -> Any:
        assert self.peft is not None
        return self.peft.peft_config[name]

    def params(self, name: str) -> dict[str, nn.Parameter]:
        return self._params[name]

    def activate(self, name: str | None, trainable: bool = False) -> None:
        """Route forwards through adapter ``name`` (None: the bare base model)."""
        if self._active == (name, trainable) or self.peft is None:
            return
        tuner: Any = self.peft.base_model
        if name is None:
            tuner.disable_adapter_layers()
        else:
            tuner.enable_adapter_layers()
            tuner.set_adapter(name, inference_mode=True)
        for params in self._params.values():
            for param in params.values():
                param.requires_grad_(False)
        if name is not None and trainable:
            for param in self._params[name].values():
                param.requires_grad_(True)
        self._active = (name, trainable)

    def copy_weights(self, source: str, target: str) -> None:
        with torch.no_grad():
            for key, param in self._params[target].items():
                param.copy_(self._params[source][key])

    def load_weights(self, name: str, tensors: dict[str, torch.Tensor], origin: str) -> None:
        params = self._params[name]
        missing = sorted(set(params) - set(tensors))
        extra = sorted(set(tensors) - set(params))
        if missing or extra:
            raise UserError(
                f"{origin} does not match this adapter's layers "
                f"(missing {missing[:3]}, unexpected {extra[:3]})"
            )
        for key, param in params.items():
            if tuple(tensors[key].shape) != tuple(param.shape):
                raise UserError(
                    f"{origin}: '{key}' has shape {list(tensors[key].shape)}, "
                    f"expected {list(param.shape)}"
                )
        with torch.no_grad():
            for key, param in params.items():
                param.copy_(tensors[key])
