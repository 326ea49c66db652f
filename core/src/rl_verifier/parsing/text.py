"""Reading model text: the one home of cutting off the reasoning before ``</think>``."""

from __future__ import annotations

import re

THINK_END = "</think>"
_LENIENT_THINK_END = re.compile(r"<\s*+/\s*+think\s*+>", re.IGNORECASE)


def after_reasoning(text: str, *, lenient: bool = False) -> str:
    """The text after the last ``</think>`` (all of it when there is none). ``lenient``
    also takes any case and spaces inside the tag (``< /THINK >``), in linear time."""
    if not lenient:
        cut = text.rfind(THINK_END)
        return text[cut + len(THINK_END) :] if cut >= 0 else text
    ends = list(_LENIENT_THINK_END.finditer(text))
    return text[ends[-1].end() :] if ends else text
