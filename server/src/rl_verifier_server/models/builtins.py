"""The built-in models every ``rlv serve`` offers, by name (cheap: imports no torch).

Each is made offline on first use (``tiny_model``, ``smollm2``) and published into the
local Hugging Face cache under its name (``hf_cache``), so clients' own Hugging Face
loaders (the cookbook's ``get_tokenizer``) find it with no hub.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from rl_verifier_server.models import smollm2
from rl_verifier_server.models.hf_cache import hub_cache, publish
from rl_verifier_server.models.tiny_model import TINY_MODEL_NAME, ensure_tiny_model

log = logging.getLogger("rl_verifier_server")

MAKERS: dict[str, Callable[[], Path]] = {
    TINY_MODEL_NAME: ensure_tiny_model,
    smollm2.SMOLLM2_NAME: smollm2.ensure_smollm2,
}


def builtin_models() -> tuple[str, ...]:
    """The built-in models this installation can offer (SmolLM2 needs its wheel, its
    conversion in the cache, or the hub's copy in the local HF cache)."""
    return tuple(name for name in MAKERS if name != smollm2.SMOLLM2_NAME or smollm2.is_available())


def builtin_directory(name: str) -> Path:
    """The local folder of built-in model ``name``, made (and published) when needed."""
    directory = MAKERS[name]()
    if not directory.resolve().is_relative_to(hub_cache().resolve()):  # else: the hub's own
        try:
            publish(directory, name)
        except OSError as exc:
            log.warning("could not publish %s to the Hugging Face cache: %s", name, exc)
    return directory
