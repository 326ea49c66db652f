"""Lean source lexing: blank out comments (and optionally strings), split into tokens."""

from __future__ import annotations

import re

# Identifier-ish tokens (with dots), commands like #eval, and attribute brackets.
TOKEN_RE = re.compile(r"#?[A-Za-z_\u00c0-\uffff][A-Za-z0-9_'!?.\u00c0-\uffff]*[?!]?|@\[|\S")


def blank(text: str, *, strings: bool) -> str:
    """Replace comments (``--`` and nested ``/- -/``) and, if asked, string literals with
    spaces, keeping newlines and every offset, so positions map back to ``text``."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _wipe(out, i, j)
            i = j
        elif text.startswith("/-", i):
            j = _block_end(text, i)
            _wipe(out, i, j)
            i = j
        elif text[i] == '"':
            j = _string_end(text, i)
            if strings:
                _wipe(out, i, j)
            i = j
        elif text[i] == "'" and _char_literal(text, i):
            j = _char_literal(text, i)
            if strings:
                _wipe(out, i, j)
            i = j
        else:
            i += 1
    return "".join(out)


def _wipe(out: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        if out[k] != "\n":
            out[k] = " "


def _block_end(text: str, start: int) -> int:
    depth, i, n = 0, start, len(text)
    while i < n:
        if text.startswith("/-", i):
            depth += 1
            i += 2
        elif text.startswith("-/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n  # unterminated: the rest is comment


def _string_end(text: str, start: int) -> int:
    i, n = start + 1, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return n


def _char_literal(text: str, start: int) -> int:
    """End of a char literal like ``'a'`` or ``'\\n'`` at ``start``, else 0. A quote after
    an identifier character is a prime (``h'``), not a literal."""
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_'!?"):
        return 0
    m = re.compile(r"'(\\.[^']*|[^'\\\n])'").match(text, start)
    return m.end() if m else 0


def code_only(text: str) -> str:
    """The text with comments and string literals blanked."""
    return blank(text, strings=True)


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def normalise(text: str) -> str:
    """Comments and strings stripped, whitespace collapsed."""
    return " ".join(code_only(text).split())
