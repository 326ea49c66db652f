"""Citation ids: those cited in an answer and those that tool responses returned."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# ``[r1]``, ``[doc:ID]`` and lists ``[r1, r2]``; group 1 holds the comma-separated ids.
DEFAULT_CITE_PATTERN = r"\[((?:doc:)?[\w.\-]+(?:\s*,\s*(?:doc:)?[\w.\-]+)*)\]"
ID_FIELDS = frozenset({"id", "doc_id"})
DOC_PREFIX = "doc:"


@lru_cache(maxsize=64)
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def cited_ids(text: str, pattern: str = DEFAULT_CITE_PATTERN) -> list[str]:
    """Ids cited in ``text``, in order, repeats kept; a ``doc:`` prefix is dropped."""
    regex = compiled(pattern)
    ids: list[str] = []
    for match in regex.finditer(text):
        group = match.group(1) if regex.groups else match.group(0)
        for part in group.split(","):
            ident = part.strip()
            ident = ident.removeprefix(DOC_PREFIX)
            if ident:
                ids.append(ident)
    return ids


def strip_citations(text: str, pattern: str = DEFAULT_CITE_PATTERN) -> str:
    """``text`` with its citation markers removed."""
    return compiled(pattern).sub(" ", text)


def returned_ids(contents: Iterable[str], pattern: str = DEFAULT_CITE_PATTERN) -> set[str]:
    """Ids that tool responses returned.

    A response that is JSON contributes the values of every ``id`` and ``doc_id`` field
    (at any depth) and the citation markers inside its string values; any other response
    contributes the citation markers (``[r1]``) in its text.
    """
    ids: set[str] = set()
    for content in contents:
        try:
            data = json.loads(content)
        except ValueError:
            ids.update(cited_ids(content, pattern))
        else:
            _walk(data, ids, pattern)
    return ids


def _walk(value: Any, ids: set[str], pattern: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ID_FIELDS and isinstance(item, str | int) and not isinstance(item, bool):
                ids.add(str(item).removeprefix(DOC_PREFIX))
            else:
                _walk(item, ids, pattern)
    elif isinstance(value, list):
        for item in value:
            _walk(item, ids, pattern)
    elif isinstance(value, str) and "[" in value:
        ids.update(cited_ids(value, pattern))
