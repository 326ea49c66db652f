"""The torch side of ``rlv serve``: LoRA training and sampling on local models, no HTTP.

``ModelHost`` is the entry point. Contract for callers:

* Call every method from one thread (no locking inside). Errors the SDK user caused raise
  ``UserError`` (safe to show); anything else is a server bug.
* Adapter and sampler ids are opaque strings of the caller (any characters). Creating a
  training adapter with an existing id fails; ``snapshot_sampler``/``load_sampler`` with an
  existing sampler id REPLACE that sampler.
* LoRA: peft, alpha = 32 for every rank (scaling 32 / rank, as Tinker), dropout 0; targets:
  attention q/k/v/o, MLP gate/up/down, unembed lm_head (other architectures: linear layers
  found under attention / MLP modules).
* Losses and their defaults: see ``runtime.losses``. Sampling rules (stop handling, reported
  logprobs): see ``runtime.sampling``. Checkpoint folder layout: see ``runtime.checkpoint``;
  other files placed in a checkpoint folder (e.g. the server's ``checkpoint.json``) are left
  alone on read, but a later save to the same folder replaces the whole folder.
"""

from typing import TYPE_CHECKING, Any

from rl_verifier.errors import UserError
from rl_verifier_server.runtime.types import (
    CheckpointInfo,
    DatumIn,
    FwdBwdResult,
    LoraSpec,
    SampledSequence,
)

if TYPE_CHECKING:
    from rl_verifier_server.runtime.checkpoint import read_checkpoint_info
    from rl_verifier_server.runtime.host import ModelHost
    from rl_verifier_server.runtime.losses import LOSSES

__all__ = [
    "LOSSES",
    "CheckpointInfo",
    "DatumIn",
    "FwdBwdResult",
    "LoraSpec",
    "ModelHost",
    "SampledSequence",
    "UserError",
    "read_checkpoint_info",
]


def __getattr__(name: str) -> Any:
    """Import torch, transformers and peft only when the model side is first used, so the
    plain data types above stay cheap to import."""
    if name == "ModelHost":
        from rl_verifier_server.runtime.host import ModelHost

        return ModelHost
    if name == "read_checkpoint_info":
        from rl_verifier_server.runtime.checkpoint import read_checkpoint_info

        return read_checkpoint_info
    if name == "LOSSES":
        from rl_verifier_server.runtime.losses import LOSSES

        return LOSSES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
