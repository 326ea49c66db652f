"""The ``math`` verifier: the answer's equivalence to the reference, as math-verify judges it,
after screens that score known reward hacks 0 (the work is in ``grading``, imported on the
first verdict)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rl_verifier import Completion, Score, Status, Task, Verdict, Verifier
from rl_verifier_math.config import MathConfig

if TYPE_CHECKING:
    from rl_verifier_math.grading import Grader


class MathVerifier(Verifier[MathConfig]):
    """Math answers: equivalence to the reference (math-verify), hardened against hacks."""

    name = "math"
    description = (
        "Math answers (\\boxed{}, 'Answer:' lines or plain text) checked for equivalence with "
        "the reference by math-verify: numbers, expressions, intervals, sets, tuples; GSM8K "
        "and MATH rows as they are; hedges, unevaluated answers, macros and giant numbers "
        "score 0."
    )
    reward_range = (0.0, 1.0)
    deterministic = True
    default_timeout_s = 10.0
    _grader: Grader | None = None

    def verify(self, task: Task, completion: Completion) -> Verdict:
        if self._grader is None:
            from rl_verifier_math.grading import Grader

            self._grader = Grader(self.config)
        return self._grader.verify(task, completion)

    def batch_metrics(self, scores: Sequence[Score]) -> dict[str, float]:
        """Share of judged answers that a hack screen scored 0."""
        judged = [s for s in scores if s.status is Status.OK]
        if not judged:
            return {}
        screened = sum(1 for s in judged if s.info.get("reason"))
        return {"screened": screened / len(judged)}
