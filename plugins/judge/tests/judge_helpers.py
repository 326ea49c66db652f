"""Tasks and scoring shortcuts shared by the judge's tests."""

from __future__ import annotations

from typing import Any

from rl_verifier import Reward, Score, Task
from rl_verifier.testing import score_groups, score_once
from rl_verifier_judge import JudgePairVerifier, JudgeRankVerifier, JudgeVerifier

CAPITAL = Task(
    id="capital",
    prompt="What is the capital of France? Answer in one word.",
    reference={"answer": "Paris", "completion": "Paris."},
)
OPEN = Task(id="open", prompt="Say something kind in a few words.")


def judge_one(settings: dict[str, Any], completion: str, task: Task = CAPITAL) -> Score:
    [score] = score_once(JudgeVerifier(settings), [(task, completion)])
    return score


def rank(settings: dict[str, Any], completions: list[str], task: Task = OPEN) -> list[Score]:
    [scores] = score_groups(Reward.of(JudgeRankVerifier(settings)), [(task, completions)])
    return scores


def pair(settings: dict[str, Any], completions: list[str], task: Task = CAPITAL) -> list[Score]:
    [scores] = score_groups(Reward.of(JudgePairVerifier(settings)), [(task, completions)])
    return scores
