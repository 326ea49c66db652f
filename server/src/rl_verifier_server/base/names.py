"""Client-supplied names that become path components on the server.

A name is one non-dot path component: 1 to ``MAX_NAME_LENGTH`` characters of letters,
digits, ``. _ - :``, not starting with ``.`` (so never ``.``, ``..`` or a hidden name, which
the checkpoint store uses for its own staging folders). ``child_path`` then also resolves
the joined path and checks it is exactly that child of the intended folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from rl_verifier import UserError

MAX_NAME_LENGTH = 128
NAME_CHARS = re.compile(r"[A-Za-z0-9._:\-]+")


def check_name(value: object, what: str) -> str:
    """``value`` if it is a valid name, else a ``UserError`` saying why not."""
    if not isinstance(value, str):
        raise UserError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise UserError(f"{what} is empty")
    if len(value) > MAX_NAME_LENGTH:
        raise UserError(f"{what} is longer than {MAX_NAME_LENGTH} characters")
    if value.startswith("."):
        raise UserError(f"{what} '{value}' may not start with '.'")
    if not NAME_CHARS.fullmatch(value):
        raise UserError(f"{what} '{value}' may use only letters, digits and . _ - :")
    return value


def child_path(folder: Path, *names: str) -> Path:
    """``folder/names...``: each a checked name, and the resolved result exactly that child."""
    for name in names:
        check_name(name, "name")
    path = folder.joinpath(*names)
    if path.resolve() != folder.resolve().joinpath(*names):
        raise UserError(f"'{'/'.join(names)}' does not stay inside its folder")
    return path
