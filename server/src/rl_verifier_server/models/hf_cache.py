"""The built-in model under its own name for Hugging Face loaders, with no hub.

``publish`` copies a model directory into the local Hugging Face hub cache as if it had
been downloaded from the hub repository ``repo_id`` (``models--ORG--NAME/snapshots/REV``
and ``refs/main``), so ``AutoTokenizer.from_pretrained("rlv/tiny-chat")`` and
``AutoModelForCausalLM.from_pretrained("rlv/tiny-chat")`` load it offline: with
``HF_HUB_OFFLINE=1`` straight from the cache, and without it once the hub turns out to be
unreachable. The cache is the one ``huggingface_hub`` uses (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``). The revision is a hash of the files, so
a changed model is a new snapshot and ``refs/main`` moves to it. Files are hard-linked
where possible, so a 269 MB model is not stored twice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from rl_verifier import publish_directory
from rl_verifier.internal import write_text

# What a loader reads; bookkeeping files of the builder stay out.
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)


def hub_cache() -> Path:
    """The Hugging Face hub cache, as ``huggingface_hub`` finds it from the environment."""
    explicit = os.environ.get("HF_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".cache" / "huggingface"
    return base / "hub"


def publish(model_dir: Path, repo_id: str, cache: Path | None = None) -> Path:
    """Make ``model_dir`` loadable as ``repo_id``; the snapshot folder it now lives in."""
    files = [model_dir / name for name in MODEL_FILES if (model_dir / name).is_file()]
    digest = hashlib.sha1()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    revision = digest.hexdigest()
    repo = (cache or hub_cache()) / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    if not snapshot.is_dir():
        # Another process may publish the same files first: its snapshot will do.
        with publish_directory(snapshot, accept_existing=Path.is_dir) as staging:
            for path in files:
                link_or_copy(path, staging / path.name)
    ref = repo / "refs" / "main"
    if not ref.is_file() or ref.read_text() != revision:
        ref.parent.mkdir(parents=True, exist_ok=True)
        write_text(ref, revision)
    return snapshot


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the filesystem allows one (no second copy of the weights), else a
    copy. Neither side is ever written in place, so sharing the data is safe."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def hub_snapshot(name: str) -> Path | None:
    """The local snapshot of a hub model in ``hub_cache()``, without network access."""
    if name.count("/") != 1:
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True, cache_dir=hub_cache()))
    except Exception:  # noqa: BLE001 - not cached, or not a hub id
        return None
