"""The one rule for JSON that comes in from outside (request bodies, JSONL rows): text must
be valid Unicode and values may nest at most ``MAX_DEPTH`` levels.

JSON can carry a lone UTF-16 surrogate (``"\\ud800"``) that no UTF-8 text holds, and nesting
that encoders and verifiers cannot follow. Both are refused where the data arrives, with
the field named, instead of failing later as a server error or a leaked worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rl_verifier.base.errors import UserError

MAX_DEPTH = 128  # levels of objects and lists below the row or body itself


def _not_unicode(text: str) -> int | None:
    """The position of the first lone surrogate in ``text``, if any."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _field(where: str, key: object) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else str(key)


def input_problem(value: Any, where: str = "") -> str | None:
    """What makes ``value`` unacceptable as input (naming the field), or ``None``."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            position = _not_unicode(item)
            if position is not None:
                name = path or "the text"
                return (
                    f"{name}: not valid Unicode (a lone surrogate "
                    f"{item[position]!a} at character {position}); send UTF-8 text"
                )
            continue
        if isinstance(item, Mapping | list):
            if depth >= MAX_DEPTH:
                return f"{path or 'the value'}: nests deeper than {MAX_DEPTH} levels"
            pairs = item.items() if isinstance(item, Mapping) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and _not_unicode(key) is not None:
                    return f"{path or 'the value'}: a key is not valid Unicode ({key!a})"
                stack.append((child, _field(path, key), depth + 1))
    return None


def check_input(value: Any, where: str = "") -> None:
    """Raise a ``UserError`` naming the field when ``value`` breaks the rule."""
    problem = input_problem(value, where)
    if problem is not None:
        raise UserError(problem)


def printable(text: str) -> str:
    """``text`` with any lone surrogate escaped, safe to put in a UTF-8 answer or log."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
