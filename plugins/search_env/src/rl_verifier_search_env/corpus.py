"""Which documents the search tool searches, and their BM25 index (built once per source)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from rl_verifier_retrieval import BM25Index, load_corpus

CORPUS_ENV = "RLV_SEARCH_CORPUS"
BUNDLED_CORPUS = Path(__file__).parent / "data" / "corpus.jsonl"


def corpus_source() -> Path:
    """``$RLV_SEARCH_CORPUS`` (a JSONL corpus or a saved index folder), else the bundled one."""
    value = os.environ.get(CORPUS_ENV, "").strip()
    return Path(value).expanduser() if value else BUNDLED_CORPUS


def load_index(source: Path | None = None) -> BM25Index:
    """The index of ``source`` (default :func:`corpus_source`); reused while the file is
    unchanged."""
    path = (source or corpus_source()).resolve()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = -1  # let the loader raise its own clear error
    return _load(path, stamp)


@lru_cache(maxsize=4)
def _load(path: Path, stamp: int) -> BM25Index:
    if path.is_dir():
        return BM25Index.load(path)
    return BM25Index.build(load_corpus(path))
