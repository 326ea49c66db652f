"""Finding the answer in a completion: boxed answers, answer lines, or the whole text.

Every scan here is linear in the text's length, so no completion can stall extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rl_verifier_math.config import Extraction

BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
ANSWER_LINE = re.compile(
    r"^[ \t>*_#]*(?:final[ \t]+answer|answer)[ \t*_]*[:：](?P<answer>[^\n]*)"
    r"|^[ \t]*####(?P<gsm8k>[^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
THINK_END = "</think>"


@dataclass(frozen=True)
class Extracted:
    """An answer found in a completion and where it came from."""

    text: str
    source: Extraction  # boxed, answer_line or whole
    boxed: tuple[str, ...] = ()  # every \boxed{} of the completion, in order


def visible_text(completion: str) -> str:
    """The completion without reasoning that ends with a closing ``</think>``."""
    cut = completion.rfind(THINK_END)
    return completion[cut + len(THINK_END) :] if cut >= 0 else completion


def boxed_contents(text: str) -> list[str]:
    """The contents of every closed ``\\boxed{...}`` (nested braces, ``\\{`` escapes)."""
    found = []
    position = 0
    while (match := BOXED.search(text, position)) is not None:
        depth, index = 1, match.end()
        while index < len(text) and depth:
            char = text[index]
            if char == "\\":
                index += 2
                continue
            depth += {"{": 1, "}": -1}.get(char, 0)
            index += 1
        if depth:
            break  # unclosed: nothing after it can be closed either
        found.append(text[match.end() : index - 1].strip())
        position = index
    return found


def answer_line(text: str) -> str | None:
    """The rest of the last ``Answer: ...`` (or GSM8K ``#### ...``) line, if any."""
    last = None
    for match in ANSWER_LINE.finditer(text):
        last = match["answer"] if match["answer"] is not None else match["gsm8k"]
    answer = last.strip(" \t*_") if last is not None else ""
    return answer or None


def extract(completion: str, mode: Extraction) -> Extracted | None:
    """The answer ``mode`` reads from ``completion``; None when there is none."""
    text = visible_text(completion)
    boxed = tuple(boxed_contents(text)) if mode in ("auto", "boxed") else ()
    if boxed and boxed[-1]:
        return Extracted(boxed[-1], "boxed", boxed)
    if mode == "boxed":
        return None
    if mode in ("auto", "answer_line"):
        line = answer_line(text)
        if line is not None:
            return Extracted(line, "answer_line", boxed)
        if mode == "answer_line":
            return None
    stripped = text.strip()
    return Extracted(stripped, "whole", boxed) if stripped else None
