"""Does a cited document support the answer? Used only when the task names no support set.

- ``contains``: the document, normalised, contains a normalised gold answer as whole words.
- ``bm25_overlap``: the idf-weighted share of gold-answer tokens the document contains is at
  least a threshold (rare answer words count for more than common ones).
- an entailment hook: ``module:function(doc_text, answer_sentence) -> bool`` (for an NLI model).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

from rl_verifier import UserError, normalise_answer
from rl_verifier_retrieval.corpus import Document
from rl_verifier_retrieval.text import ENGLISH_STOPWORDS, tokenize

Entailment = Callable[[str, str], bool]


def contains_answer(doc: Document, golds: Sequence[str]) -> bool:
    text = f" {normalise_answer(doc.indexed_text)} "
    return any(gold and f" {gold} " in text for gold in normalised(golds))


def normalised(golds: Sequence[str]) -> list[str]:
    return [normalise_answer(gold) for gold in golds]


def overlap_support(
    doc: Document, golds: Sequence[str], pool: Sequence[Document], threshold: float
) -> bool:
    """Idf-weighted share of answer tokens found in ``doc``, idf taken over ``pool``."""
    words = set(tokenize(doc.indexed_text))
    pool_words = [set(tokenize(other.indexed_text)) for other in pool] or [words]
    for gold in golds:
        tokens = [t for t in tokenize(gold, ENGLISH_STOPWORDS)] or tokenize(gold)
        if not tokens:
            continue
        weights = {t: idf(t, pool_words) for t in set(tokens)}
        found = sum(w for t, w in weights.items() if t in words)
        if found / sum(weights.values()) >= threshold:
            return True
    return False


def idf(token: str, pool: Sequence[set[str]]) -> float:
    df = sum(token in words for words in pool)
    n = len(pool)
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def load_entailment(spec: str) -> Entailment:
    """Import ``module:function``; a bad name is the user's to fix."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"entailment must be 'module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"cannot import entailment module {module_name!r}: {exc}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise UserError(f"entailment {spec!r} is not a callable")
    return function  # type: ignore[no-any-return]
