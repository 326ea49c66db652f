"""The one tokenisation both BM25 backends share."""

from __future__ import annotations

import re
from collections.abc import Collection

TOKEN = re.compile(r"\w+")

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "were",
        "which",
        "will",
        "with",
        "you",
        "your",
    }
)


def tokenize(text: str, stopwords: Collection[str] = ()) -> list[str]:
    """Lowercase ``\\w+`` tokens, leaving out ``stopwords`` (none by default)."""
    tokens = TOKEN.findall(text.lower())
    if stopwords:
        return [token for token in tokens if token not in stopwords]
    return tokens
