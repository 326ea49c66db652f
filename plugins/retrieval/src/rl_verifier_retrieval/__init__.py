"""Retrieval verifier for rl-verifier: answers with citations, checked against a corpus."""

from rl_verifier_retrieval.corpus import Document, load_corpus
from rl_verifier_retrieval.index import BM25Index
from rl_verifier_retrieval.text import tokenize
from rl_verifier_retrieval.verifier import RetrievalConfig, RetrievalVerifier

__version__ = "0.1.0"

__all__ = [
    "BM25Index",
    "Document",
    "RetrievalConfig",
    "RetrievalVerifier",
    "__version__",
    "load_corpus",
    "tokenize",
]
