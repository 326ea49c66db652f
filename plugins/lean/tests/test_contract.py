"""The core's contract tests, with the fake REPL."""

from __future__ import annotations

from typing import Any, ClassVar

from lean_helpers import FAKE_CONFIG, STATEMENT, lean, task

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_lean.verifier import LeanVerifier


class TestLeanContract(VerifierContract):
    verifier_class = LeanVerifier
    config: ClassVar[dict[str, Any]] = dict(FAKE_CONFIG)

    def cases(self) -> list[Case]:
        t = task()
        return [
            Case(t, lean("by simp"), Status.OK, 1.0),
            Case(t, lean(f"{STATEMENT} := by decide"), Status.OK, 1.0),
            Case(t, lean("by exact bogus"), Status.OK, 0.0),
            Case(t, lean("by sorry"), Status.OK, 0.0),
            Case(t, lean("theorem my_thm (n : ℕ) : True := trivial"), Status.OK, 0.0),
            Case(t, "no lean block at all", Status.INVALID, 0.0),
            Case(Task(id="no-statement", prompt="p"), lean("by simp"), Status.ERROR),
        ]
