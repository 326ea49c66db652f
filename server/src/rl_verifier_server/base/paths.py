"""Default locations on disk."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("RLV_CACHE_DIR", Path.home() / ".cache" / "rl-verifier"))


def default_data_dir() -> Path:
    return Path(os.environ.get("RLV_SERVER_DIR", cache_root() / "server"))
