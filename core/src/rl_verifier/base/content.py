"""Digests of the files a verifier's settings name: a rewritten file is another input, so
the verdict cache and score provenance key on a file's content, not on its path.

A file is read once per version: its digest is remembered by what ``os.stat`` says of it
(device, inode, size, modification and change times, in nanoseconds), so asking again for
an unchanged file costs one ``stat``.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

BLOCK = 1 << 20


@functools.lru_cache(maxsize=1024)
def _digest_of(path: str, version: tuple[int, ...]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path | str) -> str:
    """SHA-256 of the file's bytes (read again only when the file changed); ``OSError``
    when it cannot be read."""
    name = os.path.realpath(path)
    found = os.stat(name)
    version = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
    return _digest_of(name, version)


def content_digest(path: Path | str) -> str:
    """``file_digest``, or what stops it being read (``missing``, ``unreadable: ...``): a
    verifier that cannot read its file errs on every sample, and errors are never cached."""
    try:
        return file_digest(path)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def files_digest(paths: Iterable[Path], root: Path) -> str:
    """One digest of several files' contents, each named by its path below ``root``."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(f"{path.relative_to(root).as_posix()}\0{content_digest(path)}\0".encode())
    return digest.hexdigest()
