"""Citation precision, recall and F1, hallucinated share, and the combined reward.

Citations beyond ``max_citations`` (distinct ids, in order of first mention) are never
credited: they cannot add to recall or to the supported count. They still count in the
precision denominator and in the hallucinated share, so citing past the cap can only lower
the reward: spamming every id is no better than citing none.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CitationScores:
    precision: float
    recall: float
    f1: float
    hallucinated_share: float


def citation_scores(
    cited: Sequence[str],
    cap: int,
    exists: Callable[[str], bool],
    supports: Callable[[str], bool],
    support: Collection[str] | None,
) -> CitationScores:
    """Scores for distinct ``cited`` ids; ``support`` None means judge each doc's content."""
    if not cited:
        return CitationScores(0.0, 0.0, 0.0, 0.0)
    credited = [doc_id for doc_id in cited[:cap] if exists(doc_id)]
    if support is not None:
        good = [doc_id for doc_id in credited if doc_id in support]
        recall = len(set(good)) / len(support)
    else:
        good = [doc_id for doc_id in credited if supports(doc_id)]
        recall = 1.0 if good else 0.0  # ALCE: the citations, together, support the answer
    precision = len(good) / len(cited)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    hallucinated = sum(not exists(doc_id) for doc_id in cited) / len(cited)
    return CitationScores(precision, recall, f1, hallucinated)


@dataclass(frozen=True)
class Weights:
    answer: float = 0.6
    citation: float = 0.4
    hallucination: float = 0.5

    def reward(self, answer: float, citation_f1: float, hallucinated: float) -> float:
        """``answer·A + citation·F1 - hallucination·H``, clipped to [0, 1]."""
        raw = self.answer * answer + self.citation * citation_f1 - self.hallucination * hallucinated
        return min(1.0, max(0.0, raw))
