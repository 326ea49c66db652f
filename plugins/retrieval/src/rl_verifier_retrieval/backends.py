"""Two BM25 scorers with one scoring function: Lucene BM25 (the bm25s default).

score(q, d) = sum over query tokens t (repeats counted) of
    idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl)),
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

bm25s ``method="lucene"`` computes exactly this. rank_bm25's ``BM25Okapi`` differs twice:
its idf is ``ln((N - df + 0.5) / (df + 0.5))`` with negative values replaced by
``epsilon * mean_idf`` (0.25 by default), so terms in more than half the documents get an
arbitrary floor; and its term factor carries the constant ``(k1 + 1)``. ``LuceneOkapi``
overrides the idf with Lucene's (always positive, no floor needed) and the backend divides
by ``(k1 + 1)``, so both give the same numbers. (bm25s ``method="robertson"`` instead floors
idf at 0 and also drops ``(k1 + 1)``: it equals ``BM25Okapi(epsilon=0) / (k1 + 1)``.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import bm25s  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

Scores = npt.NDArray[np.floating[Any]]


class Scorer(Protocol):
    """Scores every document of the index for one tokenised query."""

    name: str

    def scores(self, query: Sequence[str]) -> Scores: ...

    def save(self, directory: Path) -> None: ...


class LuceneOkapi(BM25Okapi):  # type: ignore[misc]
    """rank_bm25's Okapi scorer with Lucene's idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        n = self.corpus_size
        self.idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in nd.items()}


class RankBM25Scorer:
    """rank_bm25, pure Python: scoring is linear in the corpus per query token."""

    name = "rank_bm25"

    def __init__(self, tokens: Sequence[list[str]], k1: float, b: float) -> None:
        self.size = len(tokens)
        self.k1 = k1
        self.model = LuceneOkapi(list(tokens), k1=k1, b=b) if tokens else None

    def scores(self, query: Sequence[str]) -> Scores:
        if self.model is None or not query:
            return np.zeros(self.size)
        raw: Scores = self.model.get_scores(list(query))
        return raw / (self.k1 + 1)

    def save(self, directory: Path) -> None:
        """Nothing to write: ``load`` rebuilds it from the saved documents."""


class BM25SScorer:
    """bm25s: scores precomputed into a sparse matrix at build time; queries sum columns."""

    name = "bm25s"

    def __init__(self, model: Any, size: int) -> None:
        self.model = model
        self.size = size

    @classmethod
    def build(cls, tokens: Sequence[list[str]], k1: float, b: float) -> BM25SScorer:
        model = bm25s.BM25(k1=k1, b=b, method="lucene")
        if tokens:
            model.index(list(tokens), show_progress=False)
        return cls(model, len(tokens))

    @classmethod
    def load(cls, directory: Path, size: int) -> BM25SScorer:
        path = directory / "bm25s"
        if not size:
            return cls(None, 0)
        model = bm25s.BM25.load(str(path), mmap=True, show_progress=False)
        return cls(model, size)

    def scores(self, query: Sequence[str]) -> Scores:
        if self.model is None or not self.size:
            return np.zeros(self.size)
        ids = self.model.get_tokens_ids(list(query))
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        result: Scores = self.model.get_scores_from_ids(ids)
        return result

    def save(self, directory: Path) -> None:
        if self.size:
            self.model.save(str(directory / "bm25s"), show_progress=False)


def top_k(scores: Scores, k: int) -> list[int]:
    """Indices of the ``k`` best positive scores: highest first, ties by position."""
    if k <= 0 or scores.size == 0:
        return []
    positive = np.flatnonzero(scores > 0)
    if positive.size > k:
        threshold = np.partition(scores[positive], positive.size - k)[positive.size - k]
        positive = positive[scores[positive] >= threshold]
    order = np.lexsort((positive, -scores[positive]))
    return [int(i) for i in positive[order][:k]]


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
