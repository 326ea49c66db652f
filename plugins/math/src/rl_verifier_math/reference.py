"""Reference answers from a task's reference, including GSM8K and MATH rows as they are."""

from __future__ import annotations

from typing import Any

from rl_verifier_math.extract import boxed_contents

GSM8K_MARK = "####"


class ReferenceError(ValueError):
    """The task's reference holds no usable answer (the task's fault: status error)."""


def reference_answers(reference: dict[str, Any]) -> list[str]:
    """The acceptable answers, as text.

    Read from ``answers`` (a list), ``answer`` (a GSM8K answer is the text after its last
    ``####``), ``expected_answer``, or else ``solution`` (MATH: its last ``\\boxed{}``).
    """
    answers = reference.get("answers")
    if isinstance(answers, list) and answers:
        return [_text(a) for a in answers]
    for key in ("answer", "expected_answer"):
        value = reference.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            text = _text(value)
            if GSM8K_MARK in text:
                text = text.rsplit(GSM8K_MARK, 1)[1].strip()
            if text:
                return [text]
    solution = reference.get("solution")
    if isinstance(solution, str):
        boxed = boxed_contents(solution)
        if boxed and boxed[-1]:
            return [boxed[-1]]
    raise ReferenceError(
        "task reference has no answer: give 'answer', 'answers', or a 'solution' with \\boxed{}"
    )


def reference_base(reference: dict[str, Any]) -> int | None:
    """The base (2 to 36) a task names for its answer digits (``"base": 16``), if any."""
    base = reference.get("base")
    if base is None:
        return None
    if isinstance(base, bool) or not isinstance(base, int) or not 2 <= base <= 36:
        raise ReferenceError(f"reference base {base!r} is not an integer from 2 to 36")
    return base


def _text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ReferenceError(f"reference answer {value!r} is not text or a number")
    return str(value).strip()
