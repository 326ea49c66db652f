"""Find the program in a completion: a fenced Python block, or (optionally) the whole text."""

from __future__ import annotations

import re
from typing import Literal

Which = Literal["last", "first"]

# An opening fence of three or more backticks, an optional language tag, then the body
# up to a closing fence of the same length at the start of a line.
FENCE = re.compile(
    r"^(?P<fence>`{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})


def code_blocks(text: str) -> list[str]:
    """Bodies of the fenced blocks tagged as Python (or untagged), in order."""
    return [
        m.group("body")
        for m in FENCE.finditer(text)
        if m.group("lang").lower() in PYTHON_TAGS and m.group("body").strip()
    ]


def extract_code(text: str, which: Which = "last", allow_unfenced: bool = False) -> str | None:
    """The chosen block; with ``allow_unfenced``, the whole text when it has no fence and
    parses as Python. None when there is no code."""
    blocks = code_blocks(text)
    if blocks:
        return blocks[-1] if which == "last" else blocks[0]
    if allow_unfenced and "```" not in text and text.strip() and "\x00" not in text:
        try:
            compile(text, "<completion>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None
        return text
    return None
