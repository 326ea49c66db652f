"""What the judge verifiers share: the client's lifetime, failure verdicts and batch
metrics over the calls they made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic

from typing_extensions import TypeVar

from rl_verifier import Score, Status, Verdict, Verifier
from rl_verifier_judge.client import JudgeClient
from rl_verifier_judge.logprob_scores import LowMass, expected_score
from rl_verifier_judge.replies import JudgeFailure, Reply, Usage
from rl_verifier_judge.settings import JUDGE_EXECUTION_KEYS, JudgeSettings

SettingsT = TypeVar("SettingsT", bound=JudgeSettings, covariant=True, default=JudgeSettings)
TEXT_KEPT = 2000  # characters of the judge's reply kept in a row's info
USAGE_KEYS = ("calls", "cached_calls", "attempts", "prompt_tokens", "completion_tokens")


class JudgeBase(Verifier[SettingsT], Generic[SettingsT]):
    """An LLM judge behind an OpenAI-compatible endpoint."""

    deterministic: ClassVar[bool] = False  # sampled; its calls are cached by content instead
    default_timeout_s: ClassVar[float] = 600.0
    execution_keys: ClassVar[frozenset[str]] = JUDGE_EXECUTION_KEYS
    _client: JudgeClient | None = None

    @property
    def client(self) -> JudgeClient:
        if self._client is None:
            self._client = JudgeClient(self.config)
        return self._client

    async def open(self) -> None:
        _ = self.client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def normalise(self, score: float) -> float:
        low, high = self.config.scale
        return (score - low) / (high - low)

    def batch_metrics(self, scores: Sequence[Score]) -> dict[str, float]:
        return judge_metrics(scores)

    def from_logprobs(self, reply: Reply, usage: Usage, **info: Any) -> Verdict:
        """``format='logprobs'``: the expected score digit at the reply's first token;
        too little probability on the digits, or no logprobs sent, is ``error``."""
        if reply.alternatives is None:
            return Verdict.errored(
                "the judge endpoint sent no logprobs (format='logprobs' needs one that "
                "returns top_logprobs on /chat/completions)",
                judge_text=clipped(reply.text),
                judge=usage.as_info(),
                **info,
            )
        try:
            config = self.config
            found = expected_score(reply.alternatives, config.scale, config.min_score_mass)
        except LowMass as exc:
            return unparsed(
                str(exc),
                reply.text,
                usage,
                score_mass=round(exc.mass, 6),
                score_distribution=exc.distribution,
                **info,
            )
        return Verdict.ok(
            self.normalise(found.score),
            score=found.score,
            **found.info(),
            judge_text=clipped(reply.text),
            judge=usage.as_info(),
            **info,
        )


def clipped(text: str) -> str:
    return text if len(text) <= TEXT_KEPT else text[:TEXT_KEPT] + f"... [{len(text)} chars]"


def failure(problem: JudgeFailure, usage: Usage, **info: Any) -> Verdict:
    """The verdict of a call that failed: ``error`` or ``timeout``, with the reason."""
    if problem.text:
        info["judge_text"] = clipped(problem.text)
    info["judge"] = usage.as_info()
    return Verdict(status=problem.status, error=f"judge call failed: {problem.reason}", info=info)


def unparsed(reason: str, text: str, usage: Usage, **info: Any) -> Verdict:
    """The judge answered, but not in the asked format: ``error``, never a score."""
    return Verdict.errored(
        f"judge answer not in the asked format: {reason}",
        judge_text=clipped(text),
        judge=usage.as_info(),
        unparsed=True,
        **info,
    )


def judge_metrics(scores: Sequence[Score]) -> dict[str, float]:
    """Calls, tokens, cache hits, error and unparsed rates; a group's calls counted once."""
    totals = dict.fromkeys(USAGE_KEYS, 0)
    seen_groups: set[str] = set()
    disagreements: list[float] = []
    consistent: list[float] = []
    for score in scores:
        group = score.info.get("group")
        usage = score.info.get("judge")
        if isinstance(group, dict):
            if group.get("id") in seen_groups:
                continue
            seen_groups.add(str(group.get("id")))
            usage = group.get("judge")
            if isinstance(group.get("disagreement"), int | float):
                disagreements.append(float(group["disagreement"]))
        if isinstance(usage, dict):
            for key in USAGE_KEYS:
                totals[key] += int(usage.get(key) or 0)
        if isinstance(score.info.get("position_consistent"), bool):
            consistent.append(float(score.info["position_consistent"]))
    rows = len(scores) or 1
    asked = totals["calls"] + totals["cached_calls"]
    metrics: dict[str, float] = {f"judge_{key}": float(v) for key, v in totals.items()}
    metrics["judge_cache_hit_rate"] = totals["cached_calls"] / asked if asked else 0.0
    metrics["judge_error_rate"] = sum(s.status is Status.ERROR for s in scores) / rows
    metrics["judge_timeout_rate"] = sum(s.status is Status.TIMEOUT for s in scores) / rows
    metrics["judge_unparsed_rate"] = sum(bool(s.info.get("unparsed")) for s in scores) / rows
    if disagreements:
        metrics["position_disagreement"] = sum(disagreements) / len(disagreements)
    if consistent:
        metrics["position_consistency"] = sum(consistent) / len(consistent)
    return metrics
