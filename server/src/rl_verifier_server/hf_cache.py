"""The built-in model under its own name for Hugging Face loaders, with no hub.

``publish`` copies a model directory into the local Hugging Face hub cache as if it had
been downloaded from the hub repository ``repo_id`` (``models--ORG--NAME/snapshots/REV``
and ``refs/main``), so ``AutoTokenizer.from_pretrained("rlv/tiny-chat")`` and
``AutoModelForCausalLM.from_pretrained("rlv/tiny-chat")`` load it offline: with
``HF_HUB_OFFLINE=1`` straight from the cache, and without it once the hub turns out to be
unreachable. The cache is the one ``huggingface_hub`` uses (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``). The revision is a hash of the files, so
a changed model is a new snapshot and ``refs/main`` moves to it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from rl_verifier import publish_directory, write_text

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
                shutil.copy2(path, staging / path.name)
    ref = repo / "refs" / "main"
    if not ref.is_file() or ref.read_text() != revision:
        ref.parent.mkdir(parents=True, exist_ok=True)
        write_text(ref, revision)
    return snapshot
