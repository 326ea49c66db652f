"""Validate job file names and turn file contents into bytes."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping

from rl_verifier_sandbox.api import BadJob


def as_bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else data


def safe_relpath(name: str) -> str:
    """Normalise a work-dir-relative path; reject absolute paths and ``..``."""
    norm = posixpath.normpath(name)
    if not name or norm.startswith(("/", "..")) or norm == "." or "\0" in name:
        raise BadJob(f"bad job file name: {name!r}")
    return norm


def parent_dirs(names: Mapping[str, object]) -> Iterator[str]:
    """Every directory that must exist for the given relative names, parents first."""
    seen: set[str] = set()
    for name in sorted(names):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in seen:
                seen.add(d)
                yield d
