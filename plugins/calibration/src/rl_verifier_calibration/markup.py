"""Finding tagged spans in model text, in time linear in its length."""

from __future__ import annotations

import re
from functools import cache

_THINK_END = re.compile(r"<\s*+/\s*+think\s*+>", re.IGNORECASE)


def final_part(text: str) -> str:
    """The text after the last ``</think>``, or all of it."""
    ends = list(_THINK_END.finditer(text))
    return text[ends[-1].end() :] if ends else text


@cache
def _tag_token(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"<\s*+(?P<close>/)?\s*+(?P<name>{alternatives})\s*+>", re.IGNORECASE)


def tag_bodies(text: str, *names: str) -> list[str]:
    """The contents of every ``<name>...</name>`` pair, in order. An opening tag without
    its closing tag is ignored (a later opening tag of the same name takes its place)."""
    bodies: list[str] = []
    opened: re.Match[str] | None = None
    for token in _tag_token(names).finditer(text):
        name = token["name"].lower()
        if token["close"] is None:
            opened = token
        elif opened is not None and opened["name"].lower() == name:
            bodies.append(text[opened.end() : token.start()])
            opened = None
    return bodies
