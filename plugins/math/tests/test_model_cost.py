"""An answer whose checking would take long is the model's doing, so it scores ok 0 (with
``info.limit`` naming the bound) or invalid, never timeout: a timeout is dropped from training,
which would let a policy escape its penalty. Each input here made sympy (or a scan) run past the
deadline, or for seconds, before its bound existed."""

from __future__ import annotations

import pytest
from math_helpers import task

from rl_verifier import Status
from rl_verifier.testing import score_once
from rl_verifier_math import MathVerifier

COSTLY = [
    ("\\boxed{(x+1)^{3000} - (x-1)^{3000}}", "max_terms"),  # ran past 10 s: a 3000th power expanded
    ("\\boxed{(x+1)^{9999}}", "max_terms"),
    ("\\boxed{(x+y+z)^{80}}", "max_terms"),
    ("\\boxed{\\binom{10^{6}}{5 \\cdot 10^{5}}}", "max_digits"),  # ran past 15 s
    ("\\boxed{\\prod_{k=1}^{10^{6}} k}", "max_digits"),  # 7.7 s
    ("Answer: (9**9999)**999", "max_digits"),  # a 9.5-million-digit power
    ("The answer is 9**9**9.", "max_digits"),
    ("\\boxed{" + "(" * 100 + "x" + ")" * 100 + "}", "nesting"),  # 2.9 s to parse
    ("\\boxed{" + "\\frac{1}{" * 60 + "x" + "}" * 60 + "}", "nesting"),
    ("\\boxed{" + "x+" * 600 + "x}", "max_answer_chars"),
]


@pytest.mark.parametrize("reject_unevaluated", [True, False])
def test_costly_answers_score_zero_with_the_limit_never_timeout(reject_unevaluated: bool) -> None:
    # The reference is an expression, so no "not evaluated" screen stands in for the bounds.
    verifier = MathVerifier({"timeout_s": 8.0, "reject_unevaluated": reject_unevaluated})
    pairs = [(task("2x+1"), completion) for completion, _ in COSTLY]
    scores = score_once(verifier, pairs, "process", workers=2)
    for (completion, limit), score in zip(COSTLY, scores, strict=True):
        assert (score.status, score.reward) == (Status.OK, 0.0), (completion[:60], score)
        assert score.info["limit"] == limit, (completion[:60], score.info)


HOSTILE_TEXT = [
    "a" * 1_000_000,
    "the answer is " * 100_000,
    "\\boxed{" * 100_000,
    "So " + "word " * 200_000,
    "Answer: " + "1, " * 300_000,
    "x" * 500_000 + " 8",
    ("(" * 5000 + "\n") * 100,
]


def test_hostile_completions_are_scanned_in_linear_time() -> None:
    verifier = MathVerifier({"timeout_s": 8.0})
    scores = score_once(verifier, [(task("7"), c) for c in HOSTILE_TEXT], "process", workers=2)
    for completion, score in zip(HOSTILE_TEXT, scores, strict=True):
        assert score.status in (Status.OK, Status.INVALID), (completion[:40], score)
        assert score.reward == 0.0


def test_ordinary_answers_stay_within_the_bounds() -> None:
    fine = ["\\boxed{(x+1)^2 - x^2}", "\\boxed{x^{100} + 1}", "\\boxed{((2x+1))}", "\\boxed{2x+1}"]
    verifier = MathVerifier({"reject_unevaluated": False})
    scores = score_once(verifier, [(task("2x+1"), c) for c in fine])
    assert [s.reward for s in scores] == [1.0, 0.0, 1.0, 1.0], [s.info for s in scores]
