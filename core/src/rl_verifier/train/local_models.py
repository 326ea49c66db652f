"""Base models a local ``rlv serve`` can load, known without starting it (or importing torch).

A run with ``backend = "local"`` starts the server and preloads its ``base_model`` (as the
server's operator), so the model may be: a built-in one (``rlv/tiny-chat``, SmolLM2), a
local Hugging Face model directory (one with ``config.json``), or a hub id already in the local
Hugging Face cache. Anything else would only fail once the server is up.
"""

from __future__ import annotations

from pathlib import Path

from rl_verifier.base.errors import UserError

SHOWN_CACHED = 10  # cached hub models named in an error, at most


def check_local_model(name: str, hub_cache: Path | None = None) -> None:
    """Raise a one-line ``UserError`` listing what is offered when ``name`` is not."""
    builtin = builtin_models()
    if name in builtin:
        return
    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return
        raise UserError(
            f"base model directory '{name}' has no config.json "
            "(expected a Hugging Face model directory with its tokenizer files)"
        )
    cached = cached_hub_models(hub_cache)
    if name in cached:
        return
    cached = [model for model in cached if model not in builtin]  # rlv serve publishes these
    offered = [f"{model} (built in)" for model in builtin]
    offered += [f"{model} (Hugging Face cache)" for model in cached[:SHOWN_CACHED]]
    if len(cached) > SHOWN_CACHED:
        offered.append(f"{len(cached) - SHOWN_CACHED} more cached")
    raise UserError(
        f"base model '{name}' is not available to the local server (backend=local); "
        f"it offers: {', '.join(offered)}, or a local model directory with config.json "
        "and tokenizer files (models are never downloaded; for hosted models use "
        "--backend tinker)"
    )


def builtin_models() -> tuple[str, ...]:
    """The server's built-in models; raises when the server is not installed."""
    try:
        from rl_verifier_server.builtins import builtin_models as server_builtins
    except ImportError:
        raise UserError(
            "backend=local needs rl-verifier-server: pip install 'rl-verifier[local]'"
        ) from None
    return server_builtins()


def cached_hub_models(hub_cache: Path | None = None) -> list[str]:
    """Hub model ids whose ``main`` revision with a ``config.json`` is in the local cache."""
    try:
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.errors import CacheNotFound, CorruptedCacheException
    except ImportError:
        return []
    try:
        info = scan_cache_dir(hub_cache)
    except (CacheNotFound, CorruptedCacheException, OSError, ValueError):
        return []
    found = []
    for repo in info.repos:
        main = repo.refs.get("main")
        if repo.repo_type != "model" or main is None:
            continue
        if any(f.file_name == "config.json" for f in main.files):
            found.append(repo.repo_id)
    return sorted(found)
