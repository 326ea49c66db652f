"""The engine under the process executor: hangs become timeouts, crashes become errors,
and the rest of the batch always finishes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rlv_test_verifiers import Behaviour, Counting, OpenFails, Sleeper, Spawner

from rl_verifier import Status, Task
from rl_verifier.testing import score_once

TASK = Task(id="t", prompt="p")


def run(commands: list[str], executor: str = "process", **config: object) -> list:
    verifier = Behaviour(config)
    return score_once(verifier, [(TASK, c) for c in commands], executor, workers=2)  # type: ignore[arg-type]


def test_pure_python_loop_is_cut_at_deadline_and_batch_finishes() -> None:
    start = time.perf_counter()
    scores = run(["spin", "ok 0.25", "ok 1", "ok 0.5"], timeout_s=0.5)
    took = time.perf_counter() - start
    assert [s.status for s in scores] == [Status.TIMEOUT, Status.OK, Status.OK, Status.OK]
    assert [s.reward for s in scores] == [0.0, 0.25, 1.0, 0.5]
    assert "0.5s" in (scores[0].error or "")
    assert took < 5


def test_blocking_c_call_is_cut_at_deadline() -> None:
    scores = run(["sleep_c", "ok 1"], timeout_s=0.5)
    assert [s.status for s in scores] == [Status.TIMEOUT, Status.OK]
    assert scores[0].elapsed_s < 3


def test_timeout_kills_the_workers_children(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    [score] = score_once(Spawner({"marker": str(marker)}), [(TASK, "x")], "process")
    assert score.status is Status.TIMEOUT
    time.sleep(2.5)
    assert not marker.exists(), "a process started by the verifier outlived its deadline"


def test_exception_becomes_error_with_message() -> None:
    scores = run(["raise", "ok 1"])
    assert scores[0].status is Status.ERROR
    assert "RuntimeError: verifier bug" in (scores[0].error or "")
    assert scores[0].reward == 0.0
    assert scores[1].status is Status.OK


def test_worker_that_exits_is_an_error_and_pool_recovers() -> None:
    scores = run(["exit", "ok 1", "exit", "ok 0.5"])
    assert [s.status for s in scores] == [Status.ERROR, Status.OK, Status.ERROR, Status.OK]
    assert "exit code 3" in (scores[0].error or "")


def test_stdout_noise_does_not_corrupt_results() -> None:
    assert [s.reward for s in run(["print", "print"])] == [1.0, 1.0]


def test_reward_outside_declared_range_is_an_error() -> None:
    [score] = run(["range"])
    assert score.status is Status.ERROR
    assert "outside its declared range" in (score.error or "")


def test_wrong_return_type_is_an_error() -> None:
    for executor in ("inline", "process"):
        [score] = run(["wrong_type"], executor)
        assert score.status is Status.ERROR, executor
        assert "expected a Verdict" in (score.error or "")


def test_invalid_gets_configured_penalty() -> None:
    [score] = run(["invalid"], invalid_penalty=-0.25)
    assert (score.status, score.reward) == (Status.INVALID, -0.25)


def test_open_failure_is_an_error_for_each_sample() -> None:
    for executor in ("inline", "process"):
        scores = score_once(OpenFails(), [(TASK, "a"), (TASK, "b")], executor)  # type: ignore[arg-type]
        assert all(s.status is Status.ERROR for s in scores)
        assert "index file missing" in (scores[0].error or "")


def test_inline_executor_cuts_cooperative_async_work() -> None:
    scores = score_once(Sleeper(), [(TASK, "5"), (TASK, "0")], "inline")
    assert [s.status for s in scores] == [Status.TIMEOUT, Status.OK]
    assert scores[0].elapsed_s < 2


def test_per_verifier_concurrency_limit_is_respected() -> None:
    Counting.peak = 0
    scores = score_once(Counting(), [(TASK, f"x{i}") for i in range(12)], "inline")
    assert all(s.status is Status.OK for s in scores)
    assert Counting.peak == 2
    Counting.peak = 0
    score_once(Counting({"max_concurrency": 5}), [(TASK, f"x{i}") for i in range(12)], "inline")
    assert Counting.peak == 5


def test_scores_carry_provenance_and_keep_input_order() -> None:
    scores = run([f"ok {i / 10}" for i in range(10)])
    assert [s.reward for s in scores] == [i / 10 for i in range(10)]
    ref = scores[0].verifier
    assert ref.name == "behaviour" and len(ref.config_hash) == 16
    assert all(s.verifier == ref for s in scores)


@pytest.mark.parametrize("executor", ["inline", "process"])
def test_unloadable_class_is_reported(executor: str) -> None:
    class Local(Behaviour):
        name = "local"

    [score] = score_once(Local(), [(TASK, "ok 1")], executor)  # type: ignore[arg-type]
    if executor == "inline":
        assert score.status is Status.OK
    else:
        assert score.status is Status.ERROR
        assert "cannot be loaded by a worker process" in (score.error or "")


def test_long_lived_engine_keeps_no_scores_between_batches() -> None:
    import asyncio

    from rl_verifier.base.reward import Reward
    from rl_verifier.execution.executors import InlineExecutor
    from rl_verifier.scoring.engine import Sample, ScoringEngine
    from rl_verifier.testing.contract import as_completion

    reward = Reward.of(Behaviour())
    sample = Sample(TASK, as_completion(TASK, "ok 1"), 0)

    async def scenario(keep: bool) -> int:
        async with InlineExecutor() as executor:
            engine = ScoringEngine(executor, keep_scores=keep)
            [score] = await engine.score([(reward, sample)])
            assert score.reward == 1.0
            return sum(len(v) for v in engine.record.scores.values())

    assert asyncio.run(scenario(True)) == 1
    assert asyncio.run(scenario(False)) == 0
