"""The trajectory reward: answer, citations, legality and thrift combined."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rl_verifier import normalise_answer
from rl_verifier_tool_calls.citations import cited_ids, returned_ids, strip_citations
from rl_verifier_tool_calls.config import ToolCallsConfig
from rl_verifier_tool_calls.schema import illegal_reason
from rl_verifier_tool_calls.trajectory import Trajectory


@dataclass(slots=True)
class Outcome:
    """A reward, its components and what explains it."""

    reward: float
    components: dict[str, float]
    info: dict[str, Any]


def thrift(calls: int, target: int) -> float:
    """1 up to ``target`` calls, then falling linearly to 0 at twice the target."""
    if calls <= target:
        return 1.0
    return max(0.0, 1.0 - (calls - target) / target)


def extract_answer(final: str, pattern: str) -> str:
    matches = re.findall(pattern, final, flags=re.DOTALL)
    if not matches:
        return final
    last = matches[-1]
    return str(last[0] if isinstance(last, tuple) else last)


def score_trajectory(
    trajectory: Trajectory,
    tools: Mapping[str, Any],
    gold: list[str],
    config: ToolCallsConfig,
) -> Outcome:
    """Score a parsed, non-empty trajectory."""
    reasons = [illegal_reason(call, tools) for call in trajectory.calls]
    illegal = [
        {"index": i, "name": call.name, "reason": reason}
        for i, (call, reason) in enumerate(zip(trajectory.calls, reasons, strict=True))
        if reason is not None
    ]
    count = len(trajectory.calls)
    legality = 1.0 - len(illegal) / count if count else 1.0
    cited = list(dict.fromkeys(cited_ids(trajectory.final, config.cite_pattern)))
    returned = returned_ids(trajectory.responses, config.cite_pattern)
    fabricated = [ident for ident in cited if ident not in returned]
    citation = (len(cited) - len(fabricated)) / len(cited) if cited else 0.0
    fabricated_share = len(fabricated) / len(cited) if cited else 0.0
    answer = extract_answer(trajectory.final, config.answer_pattern)
    clean = normalise_answer(strip_citations(answer, config.cite_pattern))
    correct = 1.0 if clean and clean in {normalise_answer(g) for g in gold} else 0.0
    thrift_score = thrift(count, config.target_calls)
    components = {
        "answer": correct,
        "citation_validity": citation,
        "legality": legality,
        "thrift": thrift_score,
        "fabricated_share": fabricated_share,
        "calls": float(count),
    }
    info: dict[str, Any] = {
        "answer": answer.strip(),
        "cited": cited,
        "fabricated_ids": fabricated,
        "illegal_calls": illegal,
    }
    zero_reason = _zero_reason(trajectory, count, config.max_calls)
    if zero_reason is not None:
        info["zero_reason"] = zero_reason
        return Outcome(0.0, components, info)
    w = config.weights
    reward = (
        w.answer * correct
        + w.citation * citation
        + w.legality * legality
        + w.thrift * thrift_score * correct
        - w.fabricated * fabricated_share
    )
    return Outcome(round(reward, 12), components, info)


def _zero_reason(trajectory: Trajectory, count: int, max_calls: int) -> str | None:
    if trajectory.fabricated_output:
        return "fabricated tool output: an assistant turn wrote <tool_response>"
    if trajectory.format_error is not None:
        return f"format error: {trajectory.format_error}"
    if count > max_calls:
        return f"too many tool calls: {count} > max_calls {max_calls}"
    return None


def reward_bounds(config: ToolCallsConfig) -> tuple[float, float]:
    """Lowest and highest reward the configured weights allow."""
    w = config.weights
    return (min(0.0, -w.fabricated), max(0.0, w.answer + w.citation + w.legality + w.thrift))
