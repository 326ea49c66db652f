"""Finding tagged spans in model text, in time linear in its length."""

from __future__ import annotations

import re
from functools import cache

from rl_verifier import after_reasoning


def final_part(text: str) -> str:
    """The text after the last ``</think>`` (in any case, with spaces), or all of it."""
    return after_reasoning(text, lenient=True)


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
