"""The ``calibration`` verifier: a proper scoring rule applied to a stated probability."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from rl_verifier import Completion, Score, Status, Task, Verdict, Verifier, VerifierConfig
from rl_verifier_calibration import rules
from rl_verifier_calibration.answer import AnswerError, extract_answer
from rl_verifier_calibration.forecast import ForecastError, extract_probability
from rl_verifier_calibration.metrics import Pair, as_pair, calibration_metrics
from rl_verifier_calibration.reference import OutcomeError, read_outcome

# Longest completion read (characters): room for long reasoning before the forecast, while the
# linear parse stays well inside the deadline (measured: 1 MB of numbers took 1.3 s, 10 MB 15 s).
MAX_COMPLETION_CHARS = 200_000


class CalibrationConfig(VerifierConfig):
    """Settings of the ``calibration`` verifier."""

    rule: rules.Rule = Field(
        default="brier",
        description=(
            "Scoring rule: brier (1 - (p - y)^2), log (1 + log2 of the probability given to "
            "the outcome), spherical, or rlcr (answer + confidence: correct - (c - correct)^2)."
        ),
    )
    epsilon: float = Field(
        default=0.01,
        gt=0.0,
        lt=0.5,
        description="Floor on the probability the log rule gives the outcome; "
        "its lowest reward is 1 + log2(epsilon).",
    )
    accept: Literal["any", "label", "tag"] = Field(
        default="any",
        description="Where a forecast may be written: any (tags, labels or free text), "
        "label (tags or 'Probability:' labels) or tag (<probability> tags only). "
        "Stricter formats leave a policy less room to game the parser.",
    )
    max_completion_chars: int = Field(
        default=MAX_COMPLETION_CHARS,
        ge=1,
        description="Longest completion read; a longer one is invalid (info.limit names this "
        "setting) without being parsed.",
    )
    ece_bins: int = Field(
        default=10, ge=1, le=1000, description="Equal-width bins for expected calibration error."
    )
    invalid_penalty: float = Field(
        default=-0.1,
        description="Reward when no single probability (or, for rlcr, answer) can be read.",
    )


class CalibrationVerifier(Verifier[CalibrationConfig]):
    """Scores a probability forecast of a binary question with a proper scoring rule."""

    name = "calibration"
    description = (
        "Proper scoring rule (Brier, log, spherical or RLCR) on a stated probability of a "
        "resolved binary question; batch metrics: Brier, log loss, ECE, Brier skill."
    )
    # For the default rule (brier); ``bounds()`` gives the range of the configured rule.
    reward_range = (0.0, 1.0)
    deterministic = True
    default_timeout_s = 5.0

    def bounds(self) -> tuple[float, float]:
        low, high = rules.rule_bounds(self.config.rule, self.config.epsilon)
        penalty = self.config.invalid_penalty
        return (min(low, penalty), max(high, penalty))

    def verify(self, task: Task, completion: Completion) -> Verdict:
        try:
            outcome = read_outcome(task.reference)
        except OutcomeError as exc:
            return Verdict.errored(f"task {task.id!r}: {exc}")
        text = completion.text()
        limit = self.config.max_completion_chars
        if len(text) > limit:
            return Verdict.invalid(
                f"completion of {len(text)} characters is longer than max_completion_chars "
                f"({limit})",
                limit="max_completion_chars",
                probability=None,
                outcome=outcome,
            )
        if self.config.rule == "rlcr":
            return self._verify_rlcr(text, outcome)
        try:
            forecast = extract_probability(text, self.config.accept)
        except ForecastError as exc:
            return Verdict.invalid(str(exc), probability=None, outcome=outcome)
        p, epsilon = forecast.value, self.config.epsilon
        components = {
            "brier": rules.brier(p, outcome),
            "log": rules.log_score(p, outcome, epsilon),
            "spherical": rules.spherical(p, outcome),
        }
        return Verdict.ok(
            components[self.config.rule],
            components=components,
            probability=p,
            outcome=outcome,
            source=forecast.source,
        )

    def _verify_rlcr(self, text: str, outcome: int) -> Verdict:
        empty: dict[str, Any] = {"probability": None, "answer": None, "confidence": None}
        try:
            answer = extract_answer(text)
        except AnswerError as exc:
            return Verdict.invalid(str(exc), **empty, outcome=outcome)
        try:
            forecast = extract_probability(text, self.config.accept)
        except ForecastError as exc:
            return Verdict.invalid(str(exc), **{**empty, "answer": answer}, outcome=outcome)
        confidence = forecast.value
        correct = int(answer == outcome)
        penalty = (confidence - correct) ** 2
        return Verdict.ok(
            rules.rlcr(confidence, correct),
            components={"correctness": float(correct), "calibration": -penalty},
            probability=confidence if answer == 1 else 1.0 - confidence,
            answer=answer,
            confidence=confidence,
            correct=correct,
            outcome=outcome,
            source=forecast.source,
        )

    def batch_metrics(self, scores: Sequence[Score]) -> dict[str, float]:
        """Brier, log loss, ECE, Brier skill, base rate and n over the ``ok`` rows (for
        rlcr: confidence against correctness), plus the share of ``invalid`` rows."""
        pairs: list[Pair] = []
        for score in scores:
            if score.status is Status.OK:
                pair = self._pair(score.info)
                if pair is not None:
                    pairs.append(pair)
        metrics = calibration_metrics(pairs, self.config.ece_bins)
        judged = [s for s in scores if s.status in (Status.OK, Status.INVALID)]
        if judged:
            invalid = sum(s.status is Status.INVALID for s in judged)
            metrics["invalid_rate"] = invalid / len(judged)
        return metrics

    def _pair(self, info: dict[str, Any]) -> Pair | None:
        if self.config.rule == "rlcr":
            return as_pair(info.get("confidence"), info.get("correct"))
        return as_pair(info.get("probability"), info.get("outcome"))
