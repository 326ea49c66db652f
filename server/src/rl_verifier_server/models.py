"""Base models by name: the built-in tiny model, a local directory, or a cached hub id."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rl_verifier_server.runtime import ModelHost, UserInputError
from rl_verifier_server.tiny_model import TINY_MODEL_NAME, ensure_tiny_model


@dataclass(frozen=True)
class ModelSource:
    name: str  # what the client asked for
    directory: Path


def resolve(name: str) -> ModelSource:
    """Map a base-model name to a local directory, or raise a user error saying why not."""
    if name == TINY_MODEL_NAME:
        return ModelSource(name, ensure_tiny_model())
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").exists():
        return ModelSource(name, path.resolve())
    cached = hub_snapshot(name)
    if cached is not None:
        return ModelSource(name, cached)
    raise UserInputError(
        f"unknown base model '{name}': use '{TINY_MODEL_NAME}', a local model directory "
        "(with config.json and tokenizer files), or a hub id already in the local HF cache"
    )


def hub_snapshot(name: str) -> Path | None:
    """The local snapshot of a hub model, without network access."""
    if name.count("/") != 1:
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, or not a hub id
        return None


class ModelHosts:
    """One loaded ``ModelHost`` per model directory, shared by every client."""

    def __init__(self, device: str | None = None) -> None:
        self.device = device
        self._hosts: dict[Path, ModelHost] = {}
        self._names: dict[str, Path] = {}

    def get(self, name: str) -> ModelHost:
        """Load on first use (call from the compute thread)."""
        directory = self._names.get(name)
        if directory is None:
            source = resolve(name)
            directory = source.directory
            self._names[name] = directory
            self._names[str(directory)] = directory
        if directory not in self._hosts:
            self._hosts[directory] = ModelHost.load(directory, name, self.device)
        return self._hosts[directory]

    def directory_of(self, host: ModelHost) -> Path:
        return next(d for d, h in self._hosts.items() if h is host)

    def loaded(self) -> list[ModelHost]:
        return list(self._hosts.values())
