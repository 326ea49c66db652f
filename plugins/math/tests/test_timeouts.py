"""With the size limits turned off, answers built to make sympy run for ever end as status
timeout at their deadline, without stalling the rest of the batch: the process executor kills
the worker past its deadline. (With the limits on they score 0 at once: test_model_cost.py.)"""

from __future__ import annotations

from math_helpers import task

from rl_verifier import Status
from rl_verifier.testing import score_once
from rl_verifier_math import MathVerifier

HANG = [
    "\\boxed{(x+1)^{3000} - (x-1)^{3000}}",  # simplify() expands a huge polynomial
    "\\boxed{(x+1)^{2500} (x-1)^{2500}}",
]
TOWER = "\\boxed{9^{9^{9}}}"  # 9^387420489: a 370-million-digit integer
FINE = ["\\boxed{7}", "Answer: 8", "The answer is $7$.", "\\boxed{\\frac{14}{2}}"]


def test_hangs_end_as_timeout_and_the_batch_goes_on() -> None:
    # Screens off (max_digits, max_answer_chars at their limits), so only the deadline can
    # stop these; the fine answers share the same two workers.
    limits_off = {"max_digits": 10**18, "max_terms": 10**18, "reject_unevaluated": False}
    verifier = MathVerifier({"timeout_s": 2.0, **limits_off})
    completions = [HANG[0], *FINE[:2], HANG[1], *FINE[2:]]
    scores = score_once(verifier, [(task("7"), c) for c in completions], "process", workers=2)
    statuses = [s.status for s in scores]
    assert statuses == [Status.TIMEOUT, *[Status.OK] * 2, Status.TIMEOUT, *[Status.OK] * 2], [
        (s.status, s.error) for s in scores
    ]
    assert [s.reward for s in scores if s.status is Status.OK] == [1.0, 0.0, 1.0, 1.0]


def test_default_screens_score_the_tower_zero_without_waiting_for_the_deadline() -> None:
    verifier = MathVerifier({"timeout_s": 2.0})
    [score] = score_once(verifier, [(task("7"), TOWER)], "process", workers=1)
    assert (score.status, score.reward) == (Status.OK, 0.0)
    assert score.info["reason"].startswith("too large")
