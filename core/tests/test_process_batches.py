"""The process executor's batches (samples queued while every worker is busy go several to a
message): the same verdicts as one sample per message, deadlines and crashes still pinned
on their own sample, no row lost."""

from __future__ import annotations

import asyncio
from typing import Any

from rlv_test_verifiers import Behaviour

from rl_verifier import Status, Task
from rl_verifier.base.contracts import Score
from rl_verifier.base.reward import Reward
from rl_verifier.execution.executors import ProcessExecutor
from rl_verifier.scoring.engine import Sample, ScoringEngine
from rl_verifier.testing.contract import as_completion

TASK = Task(id="t", prompt="p")


def score(commands: list[str], executor: ProcessExecutor, **config: Any) -> list[Score]:
    """Scores of ``commands``, after a warm-up that measures the cost per sample; asserts
    that batches of more than one sample were sent when ``max_batch`` allows them."""
    reward = Reward.of(Behaviour(config))
    jobs = [(reward, Sample(TASK, as_completion(TASK, c), i)) for i, c in enumerate(commands)]
    warm = [(reward, Sample(TASK, as_completion(TASK, "ok 1"), i)) for i in range(50)]

    async def main() -> list[Score]:
        async with executor:
            await ScoringEngine(executor, cache=False).score(warm)
            scores = await ScoringEngine(executor, cache=False).score(jobs)
            peak = max(q.batches.peak for q in executor._queues.values())
            assert (peak > 1) == (executor.max_batch > 1), peak
        return scores

    return asyncio.run(main())


def rows(scores: list[Score]) -> list[tuple[Any, ...]]:
    return [(s.sample_index, s.reward, s.status, s.components, s.error) for s in scores]


def test_batched_same_results_as_one_sample_per_message() -> None:
    commands = ["ok 0.5", "raise", "invalid", "range", "wrong_type", "ok 1"] * 30
    batched = score(commands, ProcessExecutor(workers=2))
    single = score(commands, ProcessExecutor(workers=2, max_batch=1))
    assert [r[:4] for r in rows(batched)] == [r[:4] for r in rows(single)]
    assert sorted(s.sample_index for s in batched) == list(range(len(commands)))


def test_timeout_in_a_batch_is_only_its_sample() -> None:
    commands = ["ok 1"] * 100 + ["spin"] + ["ok 0.5"] * 100
    scores = score(commands, ProcessExecutor(workers=2), timeout_s=1.0)
    assert [s.sample_index for s in scores] == list(range(len(commands)))
    assert scores[100].status is Status.TIMEOUT and "1.0s" in (scores[100].error or "")
    assert [s.status for s in scores[:100] + scores[101:]] == [Status.OK] * 200
    assert [s.reward for s in scores] == [1.0] * 100 + [0.0] + [0.5] * 100


def test_blocking_c_call_in_a_batch_is_cut() -> None:
    commands = ["ok 1"] * 60 + ["sleep_c"] + ["ok 0.5"] * 60
    scores = score(commands, ProcessExecutor(workers=2), timeout_s=0.5)
    statuses = [s.status for s in scores]
    assert statuses[60] is Status.TIMEOUT
    assert statuses[:60] + statuses[61:] == [Status.OK] * 120


def test_crash_in_a_batch_is_an_error_row_and_no_row_is_lost() -> None:
    commands = ["ok 1"] * 80 + ["exit"] + ["ok 0.5"] * 80 + ["exit"] + ["ok 1"] * 10
    scores = score(commands, ProcessExecutor(workers=2))
    assert [s.sample_index for s in scores] == list(range(len(commands)))
    errors = [i for i, s in enumerate(scores) if s.status is Status.ERROR]
    assert errors == [80, 161]
    assert all("exit code 3" in (scores[i].error or "") for i in errors)
    assert [s.reward for s in scores] == [1.0] * 80 + [0.0] + [0.5] * 80 + [0.0] + [1.0] * 10
