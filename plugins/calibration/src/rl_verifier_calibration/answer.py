"""Reading a yes/no answer (for the ``rlcr`` rule) out of model text."""

from __future__ import annotations

import re

from rl_verifier_calibration.forecast import final_part

_TAG = re.compile(r"<\s*answer\s*>(?P<body>.*?)<\s*/\s*answer\s*>", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(
    r"(?<!\w)(?:final\s+)?answer[ \t]*(?:\*\*|__)?[ \t]*[:=][ \t]*(?:\*\*|__)?(?P<body>[^\n]*)",
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(r"[\s*_`'\"(\[]*(?P<word>\w+)")
_WORDS = {"yes": 1, "y": 1, "true": 1, "1": 1, "no": 0, "n": 0, "false": 0, "0": 0}
_DECORATION = " \t\r\n.!*_`'\"()[]"


class AnswerError(ValueError):
    """The text holds no single yes/no answer; the message says why."""


def extract_answer(text: str) -> int:
    """1 for yes/true/1, 0 for no/false/0: from ``<answer>`` tags first, else an
    ``Answer:`` label (its first word). Raise ``AnswerError`` when missing or ambiguous."""
    text = final_part(text)
    bodies = [m["body"].strip(_DECORATION) for m in _TAG.finditer(text)]
    if not bodies:
        for label in _LABEL.finditer(text):
            word = _FIRST_WORD.match(label["body"])
            bodies.append(word["word"] if word else "")
    if not bodies:
        raise AnswerError("no answer (expected <answer>yes</answer> or 'Answer: yes')")
    values = []
    for body in bodies:
        value = _WORDS.get(body.lower())
        if value is None:
            raise AnswerError(f"answer {body[:40]!r} is not yes or no")
        values.append(value)
    if len(set(values)) > 1:
        raise AnswerError("several different answers")
    return values[0]
