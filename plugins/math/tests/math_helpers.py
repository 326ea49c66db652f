"""Helpers shared by the math verifier's tests (importable as math_helpers)."""

from __future__ import annotations

from typing import Any

from rl_verifier import Score, Task
from rl_verifier.testing import score_once
from rl_verifier_math import MathVerifier


def task(answer: str | None = None, prompt: str = "Solve the problem.", **reference: Any) -> Task:
    """A math task whose reference is ``{"answer": answer}`` or the given keys."""
    if answer is not None:
        reference = {"answer": answer, **reference}
    return Task(id="t", prompt=prompt, verifier="math", reference=reference)


def grade(reference: Task | str, completion: str, **config: Any) -> Score:
    """Score one completion through the engine (inline)."""
    item = reference if isinstance(reference, Task) else task(reference)
    [score] = score_once(MathVerifier(config), [(item, completion)])
    return score
