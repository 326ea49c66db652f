"""Finding the answer in a completion: boxed answers, answer lines, or the whole text.

Every scan here is linear in the text's length, so no completion can stall extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rl_verifier import after_reasoning
from rl_verifier_math.config import Extraction

BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
ANSWER_LINE = re.compile(
    r"^[ \t>*_#]*(?:final[ \t]+answer|answer)[ \t*_]*[:：](?P<answer>[^\n]*)"
    r"|^[ \t]*####(?P<gsm8k>[^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
FINAL_PHRASE = re.compile(r"\b(?:answer|result)[ \t]+is\b[ \t]*[:：]?", re.IGNORECASE)
SO_LINE = re.compile(
    r"^[ \t>*_]*(?:so|thus|therefore|hence)\b[ \t]*[,:]?(?P<so>[^\n]*)\s*\Z", re.IGNORECASE
)
SENTENCE_END = re.compile(r"\.(?=\s|$)")
PROSE = re.compile(r"(?<![A-Za-z])[A-Za-z]{2,}+[ \t,]++[A-Za-z]{2,}+[ \t,]++[A-Za-z]{2}")
PHRASE_CHARS = 1000  # read after "the answer is"; a longer phrase is not an answer
LATEX = re.compile(r"\$[^$]*\$|\\[A-Za-z]+(?:\{[^{}]*\})?")


@dataclass(frozen=True)
class Extracted:
    """An answer found in a completion and where it came from."""

    text: str
    source: Extraction  # boxed, answer_line or whole
    boxed: tuple[str, ...] = ()  # every \boxed{} of the completion, in order


def visible_text(completion: str) -> str:
    """The completion without reasoning that ends with a closing ``</think>``."""
    return after_reasoning(completion)


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
    """The last final answer stated in words: the rest of an ``Answer: ...`` (or GSM8K
    ``#### ...``) line, ``the answer is X.``, or a last line ``So X.``; None if there is none."""
    candidates: list[tuple[int, str]] = []
    for match in ANSWER_LINE.finditer(text):
        line = match["answer"] if match["answer"] is not None else match["gsm8k"]
        candidates.append((match.start(), line))
    for match in FINAL_PHRASE.finditer(text):
        rest = text[match.end() : match.end() + PHRASE_CHARS + 1]
        phrase = sentence(rest.split("\n", 1)[0])
        if phrase and not is_prose(phrase):
            candidates.append((match.start(), phrase))
    tail = text.rstrip()
    last_line = tail[tail.rfind("\n") + 1 :][-PHRASE_CHARS - 1 :]
    if (so := SO_LINE.match(last_line)) is not None:
        phrase = sentence(so["so"])
        if phrase and not is_prose(phrase):
            candidates.append((len(tail), phrase))
    if not candidates:
        return None
    answer = max(candidates, key=lambda c: c[0])[1].strip(" \t*_")
    return answer or None


def sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (a full stop before a space or the end;
    ``3.5`` is not one)."""
    end = SENTENCE_END.search(text)
    return (text[: end.start()] if end else text).strip(" \t*_")


def is_prose(text: str) -> bool:
    """Three words in a row outside LaTeX, or too long: a sentence, not an answer."""
    return len(text) > PHRASE_CHARS or PROSE.search(LATEX.sub(" ", text)) is not None


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
