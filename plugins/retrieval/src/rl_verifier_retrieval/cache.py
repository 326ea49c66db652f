"""Corpus indexes cached on disk, keyed by the corpus file's content hash and settings."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from pathlib import Path

from rl_verifier import UserError, file_digest, publish_directory
from rl_verifier_retrieval.index import BM25Index, load_corpus, resolve_backend

log = logging.getLogger(__name__)


def corpus_digest(path: Path) -> str:
    """The corpus file's SHA-256 (core's ``file_digest``: read once per version of the
    file, so the verdict cache's key and this index share one pass)."""
    try:
        return file_digest(path)
    except OSError as exc:
        raise UserError(f"cannot read corpus {path}: {exc.strerror or exc}") from None


def cache_key(path: Path, backend: str, k1: float, b: float) -> str:
    settings = f"{resolve_backend(backend)}-k1={k1}-b={b}"
    return hashlib.sha256(f"{corpus_digest(path)}|{settings}".encode()).hexdigest()[:20]


def open_corpus_index(
    corpus: Path,
    cache_dir: Path | None = None,
    backend: str = "auto",
    k1: float = 1.5,
    b: float = 0.75,
) -> BM25Index:
    """Load the cached index of ``corpus``, building and saving it on first use.

    The default cache is ``.rlv-bm25/`` beside the corpus. Writes go to a temporary folder
    renamed into place, so concurrent workers never read half an index.
    """
    corpus = Path(corpus)
    root = Path(cache_dir) if cache_dir is not None else corpus.parent / ".rlv-bm25"
    target = root / f"{corpus.stem}-{cache_key(corpus, backend, k1, b)}"
    stale = False
    if (target / "meta.json").exists():
        found = cached_index(target, resolve_backend(backend), k1, b)
        if isinstance(found, BM25Index):
            return found
        log.warning("corpus index cache %s: %s; rebuilt from %s", target, found, corpus)
        stale = True
    index = BM25Index.build(load_corpus(corpus), backend, k1, b)
    # A read-only location, or another worker won the race (with the same index): this
    # worker goes on with the copy in memory.
    with contextlib.suppress(OSError), publish_directory(target, replace=stale) as staging:
        index.save(staging)
    return index


def cached_index(target: Path, backend: str, k1: float, b: float) -> BM25Index | str:
    """The index saved at ``target``, if it is whole and built with these settings; else
    why not. Anything that fails reading it is a reason to build it again: it is a cache."""
    try:
        index = BM25Index.load(target)
    except Exception as exc:  # noqa: BLE001 - a damaged cache of any kind is rebuilt
        return f"cannot load it ({type(exc).__name__}: {exc})"
    if (index.backend, index.k1, index.b) != (backend, k1, b):
        return f"built with {index.backend} k1={index.k1} b={index.b}, not {backend} k1={k1} b={b}"
    return index
