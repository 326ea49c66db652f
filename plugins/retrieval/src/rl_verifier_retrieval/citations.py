"""Citation markers: ``[d1]``, ``[1]`` (1-indexed into the task's docs), ``[doc:ID]``, lists.

Every marker resolves to a document id, so ``[d1]``, ``[1]`` and ``[doc:d1]`` naming the same
document count once, whatever mix of formats a completion uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# [doc:ID] | [d1] | [1] | [1, 2] | [d1,d2]. An ID holds no "[": it stops at the next marker's
# opening bracket, so text like "[doc:[doc:[doc:..." is read in linear time (an ID that could
# run on over later "[" made every unclosed marker rescan the rest of the text: quadratic).
BUILTIN = re.compile(
    r"\[\s*(?:doc\s*:\s*(?P<doc>[^\[\]\s]+)|(?P<list>d?\d+(?:\s*[,;]\s*d?\d+)*))\s*\]",
    re.IGNORECASE,
)
ITEM = re.compile(r"(d?)(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Citations:
    """Distinct cited ids in order of first mention, and how many markers were read."""

    ids: tuple[str, ...]
    mentions: int


def parse_citations(
    text: str,
    positional: Sequence[str] = (),
    extra: re.Pattern[str] | None = None,
) -> Citations:
    """Cited ids; ``positional`` are the task's doc ids, for ``[1]`` and ``[d1]``."""
    known = set(positional)
    found: list[str] = []
    for match in BUILTIN.finditer(text):
        if match.group("doc") is not None:
            found.append(match.group("doc"))
        else:
            found.extend(resolve_item(item, positional, known) for item in split(match["list"]))
    if extra is not None:
        for match in extra.finditer(text):
            found.append(match.group(1) if extra.groups else match.group(0))
    return Citations(ids=tuple(dict.fromkeys(found)), mentions=len(found))


def split(items: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,;]", items)]


def resolve_item(item: str, positional: Sequence[str], known: set[str]) -> str:
    """``d3`` or ``3``: the task's third document, else the literal id."""
    if item in known:
        return item
    match = ITEM.fullmatch(item)
    if match is None:  # pragma: no cover - the pattern only lets these through
        return item
    digits = match.group(2).lstrip("0") or "0"
    # A number longer than the docs' count is out of range: compared by length first, so
    # "[99999...]" never reaches int() (which refuses more than 4,300 digits).
    if len(digits) <= len(str(len(positional))) and 1 <= int(digits) <= len(positional):
        return positional[int(digits) - 1]
    return item.lower() if match.group(1) else item


def strip_citations(text: str, extra: re.Pattern[str] | None = None) -> str:
    """The text with every citation marker removed."""
    text = BUILTIN.sub(" ", text)
    if extra is not None:
        text = extra.sub(" ", text)
    return text
