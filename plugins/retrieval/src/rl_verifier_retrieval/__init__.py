"""Retrieval verifier for rl-verifier: answers with citations, checked against a corpus."""

from typing import TYPE_CHECKING, Any

from rl_verifier_retrieval.corpus import Document, load_corpus
from rl_verifier_retrieval.text import tokenize
from rl_verifier_retrieval.verifier import RetrievalConfig, RetrievalVerifier

if TYPE_CHECKING:
    from rl_verifier_retrieval.index import BM25Index

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``BM25Index`` imports numpy and bm25s: only when it is asked for."""
    if name == "BM25Index":
        from rl_verifier_retrieval.index import BM25Index

        return BM25Index
    raise AttributeError(f"module 'rl_verifier_retrieval' has no attribute {name!r}")


__all__ = [
    "BM25Index",
    "Document",
    "RetrievalConfig",
    "RetrievalVerifier",
    "__version__",
    "load_corpus",
    "tokenize",
]
