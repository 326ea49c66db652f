"""Find the program in a completion: a fenced Python block, or (optionally) the whole text."""

from __future__ import annotations

import bisect
import re
from typing import Literal

Which = Literal["last", "first"]

# A closing fence: a line of three or more backticks and nothing but spaces or tabs after them.
CLOSING = re.compile(r"(`{3,})[ \t]*")
# After an opening fence's backticks: the language tag.
TAG = re.compile(r"[ \t]*([\w+-]*)")
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of each fenced block, in order, in O(n log n).

    An opening fence is a line starting with three or more backticks; its block ends at the
    next line that is a closing fence of exactly that many backticks. An opening with no such
    closing is tried with one backtick fewer (down to three: its tag is then empty), else it
    is not a fence. The regex this replaces rescanned to the end of the text from every
    unclosed opening: 48 KB of them took 21 s, on the host, on the model's input.
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    closers: dict[int, list[int]] = {}  # fence length -> indices of closing lines, ascending
    for index, line in enumerate(lines):
        closing = CLOSING.fullmatch(line)
        if closing:
            closers.setdefault(len(closing.group(1)), []).append(index)
    blocks: list[tuple[str, str]] = []
    index = 0
    while index < len(lines) - 1:  # an opening fence needs a line after it
        line = lines[index]
        ticks = len(line) - len(line.lstrip("`"))
        end = None
        for length in range(ticks, 2, -1):
            found = closers.get(length, [])
            after = bisect.bisect_right(found, index)
            if after < len(found):
                end = found[after]
                break
        if end is None:
            index += 1
            continue
        tag_match = TAG.match(line, length)
        tag = tag_match.group(1) if tag_match else ""
        blocks.append((tag, text[starts[index + 1] : starts[end]]))
        index = end + 1
    return blocks


def code_blocks(text: str) -> list[str]:
    """Bodies of the fenced blocks tagged as Python (or untagged), in order."""
    return [
        body for tag, body in fenced_blocks(text) if tag.lower() in PYTHON_TAGS and body.strip()
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
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # too deep: not code
            return None
        return text
    return None
