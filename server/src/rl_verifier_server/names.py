"""Client-supplied names that become path components on the server.

A name is one non-dot path component: 1 to ``MAX_NAME_LENGTH`` characters of letters,
digits, ``. _ - :``, not starting with ``.`` (so never ``.``, ``..`` or a hidden name, which
the checkpoint store uses for its own staging folders). ``child_path`` then also resolves
the joined path and checks it is exactly that child of the intended folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from rl_verifier_server.runtime import UserInputError

MAX_NAME_LENGTH = 128
NAME_CHARS = re.compile(r"[A-Za-z0-9._:\-]+")


def check_name(value: object, what: str) -> str:
    """``value`` if it is a valid name, else a ``UserInputError`` saying why not."""
    if not isinstance(value, str):
        raise UserInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise UserInputError(f"{what} is empty")
    if len(value) > MAX_NAME_LENGTH:
        raise UserInputError(f"{what} is longer than {MAX_NAME_LENGTH} characters")
    if value.startswith("."):
        raise UserInputError(f"{what} '{value}' may not start with '.'")
    if not NAME_CHARS.fullmatch(value):
        raise UserInputError(f"{what} '{value}' may use only letters, digits and . _ - :")
    return value


def child_path(folder: Path, *names: str) -> Path:
    """``folder/names...``: each a checked name, and the resolved result exactly that child."""
    for name in names:
        check_name(name, "name")
    path = folder.joinpath(*names)
    if path.resolve() != folder.resolve().joinpath(*names):
        raise UserInputError(f"'{'/'.join(names)}' does not stay inside its folder")
    return path
