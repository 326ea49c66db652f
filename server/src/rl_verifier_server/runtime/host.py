"""ModelHost: one base model and what lives on it, training adapters and sampler snapshots.

Not thread-safe by design: the server calls every method from one compute thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from rl_verifier_server.runtime import forward
from rl_verifier_server.runtime.batch_memory import DEFAULT_BATCH_MEMORY_GB
from rl_verifier_server.runtime.loaded_model import LoadedModel, load_pretrained
from rl_verifier_server.runtime.lora import DEFAULT_LORA_ALPHA
from rl_verifier_server.runtime.sampling import Sampling
from rl_verifier_server.runtime.snapshots import SnapshotCache
from rl_verifier_server.runtime.training_adapters import TrainingAdapters
from rl_verifier_server.runtime.types import DatumIn, FwdBwdResult


class ModelHost:
    """One base model loaded once; any number of LoRA adapters and sampler snapshots on it.

    ``trainers`` holds the training adapters (create, optimizer step, save and restore),
    ``snapshots`` the sampler snapshots (load, drop, evict and reload) and ``sampling``
    samples from them; ``forward_backward`` and ``snapshot_sampler`` run a training adapter.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        name: str,
        *,
        max_context: int | None = None,
        lora_alpha: float = DEFAULT_LORA_ALPHA,
        max_resident_samplers: int = 8,
        max_batch_tokens: int = 8192,
        batch_memory_gb: float = DEFAULT_BATCH_MEMORY_GB,
    ) -> None:
        self.base = LoadedModel(model, tokenizer, name, max_context)
        self.trainers = TrainingAdapters(self.base, lora_alpha)
        self.snapshots = SnapshotCache(self.base, max_resident_samplers)
        self.sampling = Sampling(self.base, self.snapshots)
        self.max_batch_tokens = max(1, int(max_batch_tokens))
        self.batch_memory_bytes = int(batch_memory_gb * 2**30)

    @classmethod
    def load(
        cls, model_dir: Path, name: str, device: str | None = None, **options: Any
    ) -> ModelHost:
        """Load a HF causal LM (see ``load_pretrained``). ``options`` go to the constructor
        (max_context, lora_alpha, max_resident_samplers, max_batch_tokens,
        batch_memory_gb: the estimated activation memory one micro-batch may take)."""
        model, tokenizer = load_pretrained(model_dir, device)
        return cls(model, tokenizer, name, **options)

    def close(self) -> None:
        """Remove the spill folder of evicted snapshots (the host stays usable)."""
        self.snapshots.close()

    def forward_backward(
        self,
        adapter_id: str,
        data: list[DatumIn],
        loss_fn: str,
        config: dict[str, float] | None,
        backward: bool,
    ) -> FwdBwdResult:
        """Tinker's forward (backward=False: no grads) or forward_backward (grads accumulate
        until the adapter's optim_step). Every datum is checked before any compute."""
        trainer = self.trainers.get(adapter_id)
        return forward.forward_backward(
            self.base,
            trainer,
            data,
            loss_fn,
            config,
            backward,
            self.max_batch_tokens,
            self.batch_memory_bytes,
        )

    def check_data(
        self, data: list[DatumIn], loss_fn: str, config: dict[str, float] | None
    ) -> None:
        """The checks ``forward_backward`` makes before any compute (but those of inputs
        derived from provenance), from any thread: a bad datum is refused before queueing."""
        forward.check_data(self.base, data, loss_fn, config)

    def snapshot_sampler(
        self, adapter_id: str, sampler_id: str, directory: Path | None = None
    ) -> None:
        """A frozen copy of the adapter's current weights (replacing any sampler of that id);
        also written to ``directory`` when given."""
        self.snapshots.take(self.trainers.get(adapter_id), sampler_id, directory)
