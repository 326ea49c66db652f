"""Group verifiers (``group = True``, ``verify_group``): the engine, ``Scorer``, composite
specs, ``rlv verify`` and the contract kit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rlv_group_verifiers import ShortestFirst

from rl_verifier import Scorer, Status, Task, UserError, Verifier
from rl_verifier.base.reward import Reward
from rl_verifier.builtin.plugin import ExactMatch
from rl_verifier.cli.app import cli
from rl_verifier.scoring.engine import Sample, make_executor, score_batch
from rl_verifier.testing import GroupCase, GroupVerifierContract, score_groups
from rl_verifier.testing.contract import as_completion

Register = Callable[[type[Verifier]], type[Verifier]]
TASK = Task(id="t", prompt="Say hi.", reference={"answer": "hi"})
OTHER = Task(id="u", prompt="Say yo.", reference={"answer": "yo"})


class TestShortestFirstContract(GroupVerifierContract):
    verifier_class = ShortestFirst

    def group_cases(self) -> list[GroupCase]:
        ok = Status.OK
        return [
            GroupCase(TASK, ["hi", "hello", "hello there"], [ok] * 3, [1.0, 0.5, 0.0]),
            GroupCase(OTHER, ["yo", "yo"], [ok, ok], [1.0, 1.0]),
        ]


def test_metadata_declares_groups() -> None:
    meta = ShortestFirst.metadata()
    assert (meta.group, meta.min_group_size) == (True, 2)
    assert (ExactMatch.metadata().group, ExactMatch.metadata().min_group_size) == (False, 1)


def test_a_group_flag_without_verify_group_is_refused() -> None:
    with pytest.raises(TypeError, match="no verify_group"):

        class Broken(Verifier):
            name = "broken"
            group = True


def test_engine_judges_each_task_once_in_interleaved_input() -> None:
    reward = Reward.of(ShortestFirst())
    rows = [(TASK, "hello", 0), (OTHER, "yo!", 0), (TASK, "hi", 1), (OTHER, "y", 1)]
    jobs = [(reward, Sample(t, as_completion(t, c), i)) for t, c, i in rows]
    before = ShortestFirst.calls
    seen: list[str] = []
    result = asyncio.run(
        score_batch(jobs, make_executor("inline"), lambda s: seen.append(s.task_id))
    )
    assert ShortestFirst.calls - before == 2
    assert [(s.task_id, s.sample_index, s.reward) for s in result.scores] == [
        ("t", 0, 0.0), ("u", 0, 0.0), ("t", 1, 1.0), ("u", 1, 1.0)
    ]  # fmt: skip
    assert sorted(seen) == ["t", "t", "u", "u"]


def test_composite_spec_mixes_group_and_per_sample_verifiers() -> None:
    group, exact = ShortestFirst(), ExactMatch()
    reward = Reward(
        "0.5*shortest_first + 0.5*exact_match",
        {"shortest_first": group, "exact_match": exact},
        {"shortest_first": "0", "exact_match": "0"},
    )
    [scores] = score_groups(reward, [(TASK, ["hi", "hello there"])])
    assert [s.reward for s in scores] == pytest.approx([1.0, 0.0])
    assert scores[0].components == {"shortest_first": 1.0, "exact_match": 1.0}
    assert scores[1].components == {"shortest_first": 0.0, "exact_match": 0.0}


def test_scorer_scores_groups_and_refuses_one_alone(register_verifier: Register) -> None:
    register_verifier(ShortestFirst)
    with Scorer("shortest_first", executor="inline") as scorer:
        group = scorer.score_group(TASK, ["hello", "hi"])
        assert [s.reward for s in group] == [0.0, 1.0]
        assert [s.sample_index for s in group] == [0, 1]
        many = scorer.score_many([(TASK, "hello"), (TASK, "hi"), (OTHER, "yo")])
        assert [s.status for s in many] == [Status.OK, Status.OK, Status.ERROR]
        assert "judges a group" in (many[2].error or "")
        with pytest.raises(UserError, match=r"'shortest_first' judges a group .* given 1"):
            scorer.score(TASK, "hi")
        assert [s.reward for s in asyncio.run(scorer.ascore_group(TASK, ["a", "bb"]))] == [1, 0]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rows_of(path: Path) -> list[tuple[str, int, float]]:
    return sorted(
        (r["task_id"], r["sample_index"], r["reward"]) for r in map(json.loads, path.open())
    )


def test_rlv_verify_groups_a_tasks_completions_and_resumes(
    tmp_path: Path, register_verifier: Register
) -> None:
    register_verifier(ShortestFirst)
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [TASK.model_dump(), OTHER.model_dump()])
    completions = write_jsonl(
        tmp_path / "completions.jsonl",
        [
            {"task_id": "t", "completion": "hello"},
            {"task_id": "u", "completion": "yo"},
            {"task_id": "t", "completion": "hi"},
            {"task_id": "u", "completion": "yo yo"},
        ],
    )
    out = tmp_path / "scores.jsonl"
    args = [
        "verify",
        "--verifier",
        "shortest_first",
        "--tasks",
        str(tasks),
        "--completions",
        str(completions),
        "--out",
        str(out),
        "--executor",
        "inline",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = sorted(
        (r["task_id"], r["sample_index"], r["reward"]) for r in map(json.loads, out.open())
    )
    assert rows == [("t", 0, 0.0), ("t", 1, 1.0), ("u", 0, 1.0), ("u", 1, 0.0)]
    # An interrupted run kept one row of each group: the rest is judged with the whole group.
    lines = out.read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["sample_index"] == 0]
    out.unlink()
    (tmp_path / "scores.jsonl.partial").write_text("".join(k + "\n" for k in kept))
    result = CliRunner().invoke(cli, [*args, "--resume"])
    assert result.exit_code == 0, result.output
    rows = sorted(
        (r["task_id"], r["sample_index"], r["reward"]) for r in map(json.loads, out.open())
    )
    assert rows == [("t", 0, 0.0), ("t", 1, 1.0), ("u", 0, 1.0), ("u", 1, 0.0)]


def test_reward_server_scores_a_requests_completions_per_task(register_verifier: Register) -> None:
    from rl_verifier.reward_server.scoring import score_request

    register_verifier(ShortestFirst)
    rows = [(TASK, "hello", 0), (OTHER, "yo", 0), (TASK, "hi", 1), (TASK, "bad", 2)]
    samples = [Sample(t, as_completion(t, c), i) for t, c, i in rows]
    with Scorer("shortest_first", executor="inline") as scorer:
        assert scorer.reward is not None
        scored = asyncio.run(score_request(scorer, scorer.reward.ref, samples, 30, {3: "bad row"}))
    assert [(s.task_id, s.sample_index, s.status) for s in scored] == [
        ("t", 0, Status.OK), ("u", 0, Status.ERROR), ("t", 1, Status.OK), ("t", 2, Status.ERROR)
    ]  # fmt: skip
    assert [s.reward for s in scored[::2]] == [0.0, 1.0]
    assert "judges a group" in (scored[1].error or "") and scored[3].error == "bad row"


class ScriptedSampler:
    """Replies by (task, index) from a table, as a model seeded per sample would."""

    def __init__(self, replies: dict[tuple[str, int], str]) -> None:
        self.replies = replies

    async def sample(self, task: Task, index: int) -> Any:
        from rl_verifier.evaluation.sampling import Sampled

        reply = [{"role": "assistant", "content": self.replies[(task.id, index)]}]
        return Sampled(reply, tokens=1, turns=1, end_reason="done", seed=index, sampling_s=0.0)


def test_eval_judges_a_tasks_samples_as_one_group_and_resumes_into_it(
    tmp_path: Path, register_verifier: Register
) -> None:
    from rl_verifier.evaluation.evaluate import plan_for
    from rl_verifier.evaluation.runner import run_missing
    from rl_verifier.scoring.engine import ScoringEngine

    register_verifier(ShortestFirst)
    tasks = write_jsonl(tmp_path / "tasks.jsonl", [TASK.model_dump(mode="json")])
    plan = plan_for(str(tasks), "shortest_first", {}, n=3)
    replies = {("t", 0): "hello there", ("t", 1): "hi", ("t", 2): "hello"}

    async def run(done: dict[tuple[str, int], Any]) -> dict[int, float]:
        rows: list[dict[str, Any]] = []
        async with make_executor("inline") as executor:
            engine = ScoringEngine(executor, keep_scores=False)
            await run_missing(plan, ScriptedSampler(replies), engine, done, rows.append, done)
        assert all(r["score"]["status"] == "ok" for r in rows)
        return {r["sample_index"]: r["score"]["reward"] for r in rows}

    before = ShortestFirst.calls
    assert asyncio.run(run({})) == {0: 0.0, 1: 1.0, 2: 0.5}
    assert ShortestFirst.calls - before == 1  # one call for the task's three samples
    # Resumed with sample 1 done: the new samples are judged beside its completion.
    earlier = {("t", 1): [{"role": "assistant", "content": "hi"}]}
    assert asyncio.run(run(earlier)) == {0: 0.0, 2: 0.5}


def test_eval_rescore_judges_saved_samples_by_group(
    tmp_path: Path, register_verifier: Register
) -> None:
    from rl_verifier.evaluation.evaluate import RescoreRequest, rescore

    register_verifier(ShortestFirst)
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl", [TASK.model_dump(mode="json"), OTHER.model_dump(mode="json")]
    )
    saved = [("t", 0, "hello"), ("u", 0, "yo"), ("t", 1, "hi"), ("u", 1, "yo yo")]
    samples = write_jsonl(
        tmp_path / "samples.jsonl",
        [{"task_id": t, "sample_index": i, "completion": c, "score": {}} for t, i, c in saved],
    )
    request = RescoreRequest(samples, tmp_path / "again", "shortest_first", {}, str(tasks),
                             ks=[1], threshold=1.0, executor="inline")  # fmt: skip
    rescore(request)
    rows = [json.loads(line) for line in (tmp_path / "again/samples.jsonl").open()]
    assert [(r["task_id"], r["sample_index"], r["score"]["reward"]) for r in rows] == [
        ("t", 0, 0.0), ("u", 0, 1.0), ("t", 1, 1.0), ("u", 1, 0.0)
    ]  # fmt: skip
