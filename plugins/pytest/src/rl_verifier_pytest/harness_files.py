"""The harness scripts, as read-only files for the sandbox (mounted under ``/harness``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

HARNESS_DIR = "/harness"
_HERE = Path(__file__).with_name("harness")


@cache
def source(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


def mounted(*names: str) -> dict[str, str]:
    """``{"/harness/<name>": source}`` for each script."""
    return {f"{HARNESS_DIR}/{name}": source(name) for name in names}
