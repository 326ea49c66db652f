"""Answer correctness: SQuAD exact match or token F1 against any gold answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rl_verifier import normalise_answer


def exact_match(answer: str, golds: Sequence[str]) -> float:
    """1.0 when the normalised answer equals a normalised gold answer."""
    said = normalise_answer(answer)
    return 1.0 if any(said == normalise_answer(gold) for gold in golds) else 0.0


def token_f1(answer: str, golds: Sequence[str]) -> float:
    """Best SQuAD token F1 over the gold answers: extra words cost precision."""
    said = normalise_answer(answer).split()
    return max((pair_f1(said, normalise_answer(gold).split()) for gold in golds), default=0.0)


def pair_f1(said: list[str], gold: list[str]) -> float:
    if not said or not gold:
        return float(said == gold)
    common = sum((Counter(said) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(said), common / len(gold)
    return 2 * precision * recall / (precision + recall)
