"""The torch side of ``rlv serve``: LoRA training and sampling on local models, no HTTP.

``ModelHost`` is the entry point: one base model (``loaded_model``) with its training
adapters (``host.trainers``: create, optimizer step, save and restore), sampler snapshots
(``host.snapshots``: load, drop, evict and reload) and sampling from them
(``host.sampling``); ``host.forward_backward`` and ``host.snapshot_sampler`` run a
training adapter. Contract for callers:

* Call every method from one thread (no locking inside). Errors the SDK user caused raise
  ``rl_verifier.base.errors.UserError`` (safe to show); anything else is a server bug.
* Adapter and sampler ids are opaque strings of the caller (any characters). Creating a
  training adapter with an existing id fails; ``snapshot_sampler``/``snapshots.load`` with
  an existing sampler id REPLACE that sampler.
* LoRA: peft, alpha = 32 for every rank (scaling 32 / rank, as Tinker), dropout 0; targets:
  attention q/k/v/o, MLP gate/up/down, unembed lm_head (other architectures: linear layers
  found under attention / MLP modules).
* Losses and their defaults: see ``runtime.losses`` (datum checks: ``runtime.datums``).
  Sampling rules (stop handling, reported logprobs): see ``runtime.decoding``. Adapter
  folder layout: see ``runtime.adapter_files``; other files placed in an adapter folder
  (e.g. the server's ``checkpoint.json``) are left alone on read, but a later save to the
  same folder replaces the whole folder.
"""

import importlib
from typing import TYPE_CHECKING, Any

from rl_verifier_server.runtime.types import (
    AdamParams,
    AdapterInfo,
    AdapterLayout,
    DatumIn,
    FwdBwdResult,
    LoraSpec,
    SampledSequence,
)

if TYPE_CHECKING:
    from rl_verifier_server.runtime.adapter_files import read_adapter_info
    from rl_verifier_server.runtime.host import ModelHost
    from rl_verifier_server.runtime.losses import LOSSES

# Names whose modules import torch, transformers and peft: loaded when first used, so the
# plain data types above stay cheap to import.
_HEAVY = {
    "LOSSES": "rl_verifier_server.runtime.losses",
    "ModelHost": "rl_verifier_server.runtime.host",
    "read_adapter_info": "rl_verifier_server.runtime.adapter_files",
}

__all__ = [
    "LOSSES",
    "AdamParams",
    "AdapterInfo",
    "AdapterLayout",
    "DatumIn",
    "FwdBwdResult",
    "LoraSpec",
    "ModelHost",
    "SampledSequence",
    "read_adapter_info",
]


def __getattr__(name: str) -> Any:
    module = _HEAVY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
