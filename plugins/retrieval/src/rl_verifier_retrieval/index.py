"""A BM25 index over documents, with two interchangeable backends and on-disk persistence.

``BM25Index.build(docs, backend="auto")`` picks bm25s: measured by
``benchmarks/retrieval_bm25.py`` it queries a 100k-document corpus many times faster than
rank_bm25, and it loads a saved index with memory mapping. Both backends give the same
scores (see ``backends``), so the choice changes speed, never results.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier_retrieval.backends import (
    BM25SScorer,
    RankBM25Scorer,
    Scorer,
    top_k,
    write_json,
)
from rl_verifier_retrieval.corpus import Document, load_corpus, write_corpus
from rl_verifier_retrieval.text import ENGLISH_STOPWORDS, tokenize

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "ENGLISH_STOPWORDS",
    "BM25Index",
    "Document",
    "load_corpus",
    "tokenize",
]

BACKENDS = ("bm25s", "rank_bm25")
DEFAULT_BACKEND = "bm25s"
FORMAT = 1


class BM25Index:
    """Documents plus a BM25 scorer; look documents up by id, search by free text."""

    def __init__(
        self,
        docs: Sequence[Document],
        scorer: Scorer,
        k1: float,
        b: float,
        stopwords: Collection[str] = (),
    ) -> None:
        self.docs = list(docs)
        self.scorer = scorer
        self.k1 = k1
        self.b = b
        self.stopwords = frozenset(stopwords)
        self.by_id = {doc.id: doc for doc in self.docs}
        if len(self.by_id) != len(self.docs):
            raise UserError("document ids must be unique")

    @property
    def backend(self) -> str:
        return self.scorer.name

    @classmethod
    def build(
        cls,
        docs: Sequence[Document],
        backend: str = "auto",
        k1: float = 1.5,
        b: float = 0.75,
        *,
        stopwords: Collection[str] = (),
    ) -> BM25Index:
        """Index ``docs`` with ``backend`` (``bm25s``, ``rank_bm25`` or ``auto``)."""
        name = resolve_backend(backend)
        tokens = [tokenize(doc.indexed_text, stopwords) for doc in docs]
        scorer: Scorer
        if name == "bm25s":
            scorer = BM25SScorer.build(tokens, k1, b)
        else:
            scorer = RankBM25Scorer(tokens, k1, b)
        return cls(docs, scorer, k1, b, stopwords)

    def search(self, query: str, k: int = 5) -> list[tuple[Document, float]]:
        """The ``k`` best-scoring documents with a positive score, best first."""
        scores = self.scorer.scores(tokenize(query, self.stopwords))
        return [(self.docs[i], float(scores[i])) for i in top_k(scores, k)]

    def save(self, directory: Path) -> None:
        """Write documents, settings and (for bm25s) the score matrix under ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_corpus(self.docs, directory / "docs.jsonl")
        self.scorer.save(directory)
        meta = {
            "format": FORMAT,
            "backend": self.backend,
            "k1": self.k1,
            "b": self.b,
            "stopwords": sorted(self.stopwords),
            "size": len(self.docs),
        }
        write_json(directory / "meta.json", meta)

    @classmethod
    def load(cls, directory: Path) -> BM25Index:
        """Open a saved index; bm25s score matrices are memory-mapped, not read."""
        directory = Path(directory)
        meta = read_meta(directory)
        docs = load_corpus(directory / "docs.jsonl")
        if len(docs) != meta.get("size"):
            raise UserError(
                f"not a whole saved BM25 index: {directory} holds {len(docs)} documents, "
                f"its meta.json says {meta.get('size')}"
            )
        k1, b = float(meta["k1"]), float(meta["b"])
        stopwords = frozenset(meta["stopwords"])
        if meta["backend"] == "rank_bm25":
            return cls.build(docs, "rank_bm25", k1, b, stopwords=stopwords)
        scorer = BM25SScorer.load(directory, len(docs))
        return cls(docs, scorer, k1, b, stopwords)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.by_id

    def get(self, doc_id: str) -> Document | None:
        return self.by_id.get(doc_id)

    def __len__(self) -> int:
        return len(self.docs)


def resolve_backend(backend: str) -> str:
    if backend == "auto":
        return DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise UserError(
            f"unknown BM25 backend {backend!r}; choose one of auto, {', '.join(BACKENDS)}"
        )
    return backend


def read_meta(directory: Path) -> dict[str, Any]:
    path = directory / "meta.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"not a saved BM25 index: {path} ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UserError(f"not a saved BM25 index (format {FORMAT}): {path}")
    return meta
