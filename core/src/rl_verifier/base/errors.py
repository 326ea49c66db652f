"""Errors that are the user's to fix: printed as one line, never as a traceback."""

from __future__ import annotations

import re

from pydantic import ValidationError

# pydantic names the member of a union it tried (``str``, ``list[ChatMessage]``,
# ``function-after[...]``) or a discriminator tag inside an error's location; users
# never wrote those names, so messages leave them out.
_UNION_MEMBER = re.compile(r"^(?:[\w-]+\[.*\]|str|int|float|bool|none|dict|list|text|chat)$")


class UserError(Exception):
    """Bad input from the user: a missing file, a malformed row, an unknown name."""


def validation_problems(exc: ValidationError, noun: str = "field") -> list[str]:
    """One phrase per problem, each naming its key: ``unknown field 'x'``,
    ``field 'x' is required``, ``field 'x': <what is wrong>``."""
    problems: dict[str, str] = {}
    for err in exc.errors():
        parts = [str(p) for p in err["loc"] if not _UNION_MEMBER.match(str(p))]
        key = ".".join(parts) or "(whole value)"
        if key in problems:
            continue
        if err["type"] == "extra_forbidden":
            problems[key] = f"unknown {noun} '{key}'"
        elif err["type"] == "missing":
            problems[key] = f"{noun} '{key}' is required"
        else:
            problems[key] = f"{noun} '{key}': {err['msg']}"
    return list(problems.values())
