"""Reading a yes/no answer (for the ``rlcr`` rule) out of model text."""

from __future__ import annotations

import re

from rl_verifier_calibration.markup import final_part, tag_bodies

_LABEL = re.compile(
    r"(?<!\w)(?:final\s++)?answer[ \t]*+(?:\*\*|__)?[ \t]*+[:=][ \t]*+(?:\*\*|__)?"
    r"(?P<body>[^\n]*)",
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(r"[\s*_`'\"(\[]*+(?P<word>\w++(?:\.\d+)?)")
_WORDS = {"yes": 1, "y": 1, "true": 1, "1": 1, "no": 0, "n": 0, "false": 0, "0": 0}
_DECORATION = " \t\r\n.!*_`'\"()[]"


class AnswerError(ValueError):
    """The text holds no single yes/no answer; the message says why."""


def extract_answer(text: str) -> int:
    """1 for yes/true/1, 0 for no/false/0: from ``<answer>`` tags first, else an
    ``Answer:`` label (its first word). Raise ``AnswerError`` when missing or ambiguous."""
    text = final_part(text)
    bodies = [body.strip(_DECORATION) for body in tag_bodies(text, "answer")]
    if not bodies:
        for label in _LABEL.finditer(text):
            word = _FIRST_WORD.match(label["body"])
            bodies.append(word["word"].strip("_") if word else "")
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
