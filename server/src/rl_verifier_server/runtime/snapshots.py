"""Sampler snapshots: frozen copies of adapter weights, kept in memory up to a limit.

At most ``max_resident`` snapshots hold a peft adapter at a time; the least recently used
are evicted and reloaded on demand from their folder. A snapshot without a folder is first
written to a private spill folder, removed by ``close()``.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier_server.runtime import adapter_files
from rl_verifier_server.runtime.loaded_model import LoadedModel
from rl_verifier_server.runtime.lora import lora_config
from rl_verifier_server.runtime.training_adapters import AdapterTrainer
from rl_verifier_server.runtime.types import AdapterLayout


@dataclass
class SamplerSnapshot:
    """Frozen adapter weights to sample from: in memory, on disk, or both."""

    layout: AdapterLayout
    lora: str | None  # internal peft adapter name while resident
    directory: Path | None  # where its weights are on disk, if anywhere
    spilled: bool = False  # directory is our own spill folder


class SnapshotCache:
    """The sampler snapshots on one model, by the caller's sampler id."""

    def __init__(self, base: LoadedModel, max_resident: int = 8) -> None:
        self.base = base
        self.max_resident = max(1, int(max_resident))
        self._items: dict[str, SamplerSnapshot] = {}
        self._resident: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._spill_root: Path | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def take(self, trainer: AdapterTrainer, sampler_id: str, directory: Path | None) -> None:
        """A frozen copy of the trainer's current weights (replacing any snapshot of that
        id); also written to ``directory`` when given."""
        if directory is not None:
            layout, step = trainer.layout, trainer.step
            self.base.save_adapter(trainer.lora, layout, "sampler", directory, step)
        self._forget(sampler_id)
        lora = self.base.adapters.add(lora_config(trainer.layout), 0)
        self.base.adapters.copy_weights(trainer.lora, lora)
        folder = None if directory is None else Path(directory)
        self._items[sampler_id] = SamplerSnapshot(trainer.layout, lora, folder)
        self._touch(sampler_id)

    def load(self, sampler_id: str, directory: Path) -> None:
        """A snapshot from a sampler folder or a ``save_state`` folder (weights only)."""
        info = adapter_files.read_adapter_info(Path(directory))
        self._forget(sampler_id)
        self._items[sampler_id] = SamplerSnapshot(info.layout, None, Path(directory))
        try:
            self.resident_lora(sampler_id)
        except BaseException:
            del self._items[sampler_id]
            raise

    def relocate(self, sampler_id: str, directory: Path) -> None:
        """The caller moved the snapshot's folder to ``directory``."""
        self._get(sampler_id).directory = Path(directory)

    def detach(self, sampler_id: str) -> None:
        """The snapshot's folder is about to go away: hold its weights in memory now, and
        in the private spill folder once evicted, so the sampler keeps working."""
        snapshot = self._get(sampler_id)
        if snapshot.spilled or snapshot.directory is None:
            return
        self.resident_lora(sampler_id)
        snapshot.directory = None

    def has(self, sampler_id: str) -> bool:
        return sampler_id in self._items

    def drop(self, sampler_id: str) -> None:
        self._get(sampler_id)
        self._forget(sampler_id)

    def resident_lora(self, sampler_id: str | None) -> str | None:
        """The peft adapter of a snapshot (None: the base model), reloaded if evicted."""
        if sampler_id is None:
            return None
        snapshot = self._get(sampler_id)
        if snapshot.lora is None:
            assert snapshot.directory is not None
            origin = f"sampler weights at {snapshot.directory}"
            lora = self.base.adapters.add(lora_config(snapshot.layout), 0)
            try:
                weights = adapter_files.read_weights(snapshot.directory)
                self.base.adapters.load_weights(lora, weights, origin)
            except BaseException:
                self.base.adapters.remove(lora)
                raise
            snapshot.lora = lora
        self._touch(sampler_id)
        return snapshot.lora

    def close(self) -> None:
        """Remove the spill folder of evicted snapshots (the cache stays usable)."""
        if self._finalizer is None:
            return
        self._finalizer()
        self._finalizer = None
        self._spill_root = None
        for snapshot in self._items.values():
            if snapshot.spilled and snapshot.lora is None:
                snapshot.directory = None  # gone with the spill folder
        self._items = {k: s for k, s in self._items.items() if s.lora is not None or s.directory}

    def _get(self, sampler_id: str) -> SamplerSnapshot:
        snapshot = self._items.get(sampler_id)
        if snapshot is None:
            raise UserError(f"unknown sampler '{sampler_id}'")
        return snapshot

    def _forget(self, sampler_id: str) -> None:
        snapshot = self._items.pop(sampler_id, None)
        if snapshot is None:
            return
        self._resident.pop(sampler_id, None)
        if snapshot.lora is not None:
            self.base.adapters.remove(snapshot.lora)
        if snapshot.spilled and snapshot.directory is not None:
            shutil.rmtree(snapshot.directory, ignore_errors=True)

    def _touch(self, sampler_id: str) -> None:
        self._resident[sampler_id] = None
        self._resident.move_to_end(sampler_id)
        while len(self._resident) > self.max_resident:
            victim_id, _ = self._resident.popitem(last=False)
            self._evict(self._items[victim_id])

    def _evict(self, snapshot: SamplerSnapshot) -> None:
        assert snapshot.lora is not None
        if snapshot.directory is None:
            folder = self._spill_folder() / snapshot.lora
            self.base.save_adapter(snapshot.lora, snapshot.layout, "sampler", folder)
            snapshot.directory, snapshot.spilled = folder, True
        self.base.adapters.remove(snapshot.lora)
        snapshot.lora = None

    def _spill_folder(self) -> Path:
        if self._spill_root is None:
            self._spill_root = Path(tempfile.mkdtemp(prefix="rlv-samplers-"))
            self._finalizer = weakref.finalize(
                self, shutil.rmtree, str(self._spill_root), ignore_errors=True
            )
        return self._spill_root
