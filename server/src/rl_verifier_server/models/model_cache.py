"""The folder built-in models are kept in, and building one there once, atomically.

A build goes into a hidden folder next to its target and is renamed into place under a
file lock, so concurrent builders never leave a half-written model behind; a folder that
holds every required file is complete and is returned without building (or importing
torch).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from rl_verifier import publish_directory

# What a built model folder holds, whichever model it is (each adds its own extras).
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def default_cache_dir() -> Path:
    """``$RLV_CACHE_DIR/models``, or ``~/.cache/rl-verifier/models`` when it is unset."""
    root = os.environ.get("RLV_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "rl-verifier"
    return base / "models"


def is_complete(path: Path, required: Iterable[str]) -> bool:
    return all((path / name).is_file() for name in required)


def ensure_built(target: Path, required: tuple[str, ...], build: Callable[[Path], None]) -> Path:
    """``target``, first filled by ``build(staging_folder)`` unless it holds ``required``."""
    if is_complete(target, required):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(target.parent / f".{target.name}.lock") as locked:
        if is_complete(target, required):  # another process finished it while we waited
            return target
        if target.exists():  # incomplete, and not made by this function: start over
            shutil.rmtree(target)
        # Locked, no other builder is running: anything half-built is a leftover. Without a
        # lock (no fcntl) another builder may win the rename; builds are deterministic.
        with publish_directory(
            target, accept_existing=lambda p: is_complete(p, required), clear_stale=locked
        ) as staging:
            build(staging)
    return target


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path``; yields False where fcntl is unavailable."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX: rely on rename-if-absent
        yield False
        return
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
