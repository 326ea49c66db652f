"""BFCL test categories: which checker, which language, whether a call is expected at all."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

Language = Literal["python", "java", "javascript"]
# The single-turn categories BFCL checks by AST (or by relevance), current and older names.
KNOWN = frozenset(
    {
        "simple_python",
        "simple_java",
        "simple_javascript",
        "multiple",
        "parallel",
        "parallel_multiple",
        "live_simple",
        "live_multiple",
        "live_parallel",
        "live_parallel_multiple",
        "irrelevance",
        "live_irrelevance",
        "live_relevance",
        "simple",
        "java",
        "javascript",
    }
)


class UnknownCategory(ValueError):
    """A name that is not one of BFCL's single-turn categories."""


class Category:
    """A BFCL category, read the way BFCL reads its name (one instance per name)."""

    __slots__ = ("checker", "language", "name", "relevance")

    def __init__(self, name: str) -> None:
        self.name = name
        # The language of the function docs: decides the output syntax and the type rules.
        self.language: Language = (
            "javascript" if "javascript" in name else "java" if "java" in name else "python"
        )
        # irrelevance: no call is expected; relevance: any call passes; None: AST check.
        self.relevance: Literal["irrelevance", "relevance"] | None = (
            "irrelevance" if "irrelevance" in name else "relevance" if "relevance" in name else None
        )
        # parallel (also parallel_multiple), multiple, or simple: one call.
        self.checker: Literal["parallel", "multiple", "simple"] = (
            "parallel" if "parallel" in name else "multiple" if "multiple" in name else "simple"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Category) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Category({self.name!r})"


def category_of(question_id: str) -> Category:
    """The category of a question id (``live_simple_3-1-0`` is ``live_simple``)."""
    name = question_id.split(":", 1)[0].rsplit("_", 1)[0]
    found = _KNOWN_CATEGORIES.get(name)
    return found if found is not None else named_category(name, f"of id {question_id!r}")


@lru_cache(maxsize=64)
def named_category(name: str, where: str = "") -> Category:
    """``name`` as a :class:`Category`, if BFCL knows it."""
    if name not in KNOWN:
        known = ", ".join(sorted(KNOWN))
        raise UnknownCategory(f"unknown BFCL category {name!r} {where}(known: {known})")
    return Category(name)


_KNOWN_CATEGORIES = {name: named_category(name) for name in KNOWN}
