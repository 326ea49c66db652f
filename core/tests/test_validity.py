"""A score read back is held to what a fresh one must be: the checks pass every score the
engine gives (single and composite rewards, every status) and refuse each kind of edit."""

from __future__ import annotations

import asyncio
import json

import pytest

from rl_verifier import Completion, InlineExecutor, Reward, Sample, Task, reward_for, score_batch
from rl_verifier.base.validity import checked_score, score_problem

TASK = Task(id="t", prompt="2+2?", reference={"answer": "4"})
ANSWERS = ["<answer>4</answer>", "<answer>5</answer>", "4", "no answer tags"]


def fresh(reward: Reward) -> list[dict]:
    jobs = [(reward, Sample(TASK, Completion(task_id="t", completion=a), i))
            for i, a in enumerate(ANSWERS)]  # fmt: skip
    result = asyncio.run(score_batch(jobs, InlineExecutor(), cache=False))
    return [json.loads(score.model_dump_json()) for score in result.scores]


@pytest.mark.parametrize(
    ("spec", "settings"),
    [
        ("exact_match", {"invalid_penalty": -0.5}),
        ("0.7*exact_match + 0.3*format", {"format": {"invalid_penalty": -1.0}}),
        ("format*exact_match", {}),
    ],
)
def test_every_fresh_score_passes_and_edits_do_not(spec: str, settings: dict) -> None:
    reward = reward_for(spec, settings)
    scores = fresh(reward)
    assert {s["status"] for s in scores} >= {"ok"}
    for score in scores:
        assert not isinstance(checked_score(score, reward), str), score
        forged = [
            {**score, "reward": 5.0},
            {**score, "status": "timeout", "reward": 0.5},  # a timeout earns 0
            {**score, "status": "invalid", "reward": 0.77},  # the penalty is not 0.77
            {**score, "status": "unknown"},
            {**score, "verifier": {**score["verifier"], "version": "9.9"}},
        ]
        for edit in forged:
            assert isinstance(checked_score(edit, reward), str), edit
        # Another reward in range is refused where something fixes it: the invalid
        # penalty, or a composite's parts. An ok score of one verifier has nothing that
        # could tell 0.123 from 0 (docs/eval.md says so).
        nudged = checked_score({**score, "reward": 0.123}, reward)
        fixed = not reward.single or score["status"] != "ok"
        assert isinstance(nudged, str) is fixed, score


def test_a_composite_part_that_contradicts_its_status_is_refused() -> None:
    reward = reward_for("0.5*exact_match + 0.5*format")
    score = checked_score(fresh(reward)[0], reward)
    assert not isinstance(score, str)
    info = {**score.info, "format": {**score.info["format"], "status": "great"}}
    assert score_problem(reward, score.model_copy(update={"info": info})) is not None
    parts = {**score.components, "format": 7.0}
    problem = score_problem(reward, score.model_copy(update={"components": parts}))
    assert problem is not None and problem.startswith("format: reward 7.0 outside")
