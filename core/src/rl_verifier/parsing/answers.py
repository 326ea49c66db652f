"""Reading reference answers and comparing answers as text (SQuAD-style normalisation)."""

from __future__ import annotations

import re
import string
from typing import Any

PUNCTUATION = str.maketrans("", "", string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise_answer(text: str) -> str:
    """Lowercase, drop punctuation and English articles, collapse whitespace (SQuAD)."""
    return " ".join(ARTICLES.sub(" ", text.lower().translate(PUNCTUATION)).split())


def reference_answers(reference: dict[str, Any]) -> list[str]:
    answers = reference.get("answers", reference.get("answer"))
    if isinstance(answers, str | int | float):
        return [str(answers)]
    if isinstance(answers, list):
        return [str(a) for a in answers]
    return []
