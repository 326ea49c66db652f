"""The Ray executor gives the same verdicts as the process executor: hangs become
timeouts, dead actors become errors, and the rest of the batch always finishes.

Run by test_ray_executor.py inside a network namespace that has only loopback: a local
Ray instance otherwise binds to the machine's routable address, and tests here send
traffic to loopback only."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'rl-verifier[ray]')")

from rlv_test_verifiers import Behaviour, Sleeper  # noqa: E402

from rl_verifier import Status, Task  # noqa: E402
from rl_verifier.base.contracts import Score  # noqa: E402
from rl_verifier.base.reward import Reward  # noqa: E402
from rl_verifier.builtin.plugin import ExactMatch, FormatGate  # noqa: E402
from rl_verifier.execution.executors import Executor, ProcessExecutor  # noqa: E402
from rl_verifier.execution.ray_executor import RayExecutor, init_ray, shutdown_ray  # noqa: E402
from rl_verifier.scoring.engine import Sample, ScoringEngine, score_batch  # noqa: E402
from rl_verifier.testing.contract import as_completion  # noqa: E402

TASK = Task(id="t", prompt="p", reference={"answer": "4"})


@pytest.fixture(scope="module", autouse=True)
def ray_instance() -> Iterator[str]:
    """One local Ray instance (2 CPUs) for the whole module; yields its address."""
    owned = init_ray(num_cpus=2)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        if owned:
            shutdown_ray()


def score(verifier: Any, commands: list[str], executor: Executor) -> list[Score]:
    reward = Reward.of(verifier)
    jobs = [(reward, Sample(TASK, as_completion(TASK, c), i)) for i, c in enumerate(commands)]
    return asyncio.run(score_batch(jobs, executor)).scores


def rows(scores: list[Score]) -> list[tuple[Any, ...]]:
    return [(s.task_id, s.sample_index, s.reward, s.status, s.components) for s in scores]


def test_same_results_as_process_executor() -> None:
    batches: list[tuple[Any, list[str]]] = [
        (ExactMatch({}), ["<answer>4</answer>", "5", "the answer is 4", ""]),
        (FormatGate({"pattern": r"\d+"}), ["4", "four", "44"]),
        (Behaviour({}), ["ok 0.5", "raise", "invalid", "range", "wrong_type", "ok 1"]),
    ]
    for verifier, commands in batches:
        local = score(verifier, commands, ProcessExecutor(2))
        remote = score(verifier, commands, RayExecutor(workers=2))
        assert rows(remote) == rows(local), verifier.name
        assert [s.verifier for s in remote] == [s.verifier for s in local]
    assert "RuntimeError: verifier bug" in (remote[1].error or "")


def test_hang_is_cut_as_timeout_and_batch_finishes() -> None:
    start = time.perf_counter()
    scores = score(
        Behaviour({"timeout_s": 1.0}), ["spin", "ok 0.25", "ok 1", "ok 0.5"], RayExecutor(workers=2)
    )
    took = time.perf_counter() - start
    assert [s.status for s in scores] == [Status.TIMEOUT, Status.OK, Status.OK, Status.OK]
    assert [s.reward for s in scores] == [0.0, 0.25, 1.0, 0.5]
    assert "1.0s" in (scores[0].error or "")
    assert took < 30


def test_timeout_on_shared_actor_reruns_the_other_samples() -> None:
    """With several samples per actor, killing it for one timeout reruns the others."""
    executor = RayExecutor(workers=1, actor_concurrency=2)
    scores = score(Sleeper({"timeout_s": 1.0}), ["5", "0.5", "0.9"], executor)
    assert [s.status for s in scores] == [Status.TIMEOUT, Status.OK, Status.OK]


def test_actor_that_dies_is_an_error_and_batch_completes() -> None:
    scores = score(Behaviour({}), ["exit", "ok 1", "exit", "ok 0.5"], RayExecutor(workers=2))
    assert [s.status for s in scores] == [Status.ERROR, Status.OK, Status.ERROR, Status.OK]
    assert "actor died" in (scores[0].error or "")
    assert [s.reward for s in scores] == [0.0, 1.0, 0.0, 0.5]


def test_actor_killed_from_outside_mid_batch() -> None:
    """ray.kill of the serving actor while a sample runs: an error, not a hang."""

    async def main() -> list[Score]:
        executor = RayExecutor(workers=1)
        reward = Reward.of(Behaviour({"timeout_s": 20.0}))
        jobs = [(reward, Sample(TASK, as_completion(TASK, "sleep_c"), 0))]
        jobs += [(reward, Sample(TASK, as_completion(TASK, "ok 1"), 1))]

        async def killer() -> None:
            while not any(s.handle for p in executor._pools.values() for s in p.slots):
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            for pool in executor._pools.values():
                for slot in pool.slots:
                    ray.kill(slot.handle)

        kill = asyncio.create_task(killer())
        result = await score_batch(jobs, executor)
        await kill
        return result.scores

    start = time.perf_counter()
    scores = asyncio.run(main())
    assert [s.status for s in scores] == [Status.ERROR, Status.OK]
    assert "actor died" in (scores[0].error or "")
    assert time.perf_counter() - start < 20


def test_cli_ray_executor_writes_same_scores(tmp_path: Path, ray_instance: str) -> None:
    tasks = tmp_path / "tasks.jsonl"
    completions = tmp_path / "completions.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": "2+2", "reference": {"answer": str(i)}}) + "\n"
            for i in range(6)
        )
    )
    completions.write_text(
        "".join(
            json.dumps({"task_id": f"q{i}", "completion": f"<answer>{i % 3}</answer>"}) + "\n"
            for i in range(6)
        )
    )
    outputs = {}
    for name, extra in {
        "process": [],
        "ray": ["--executor", "ray", "--ray-address", ray_instance],
    }.items():
        out = tmp_path / f"{name}.jsonl"
        cmd = [str(Path(sys.executable).parent / "rlv"), "verify", "--verifier", "exact_match"]
        cmd += ["--tasks", str(tasks), "--completions", str(completions), "--out", str(out)]
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
        done = subprocess.run(cmd + extra, capture_output=True, text=True, env=env, timeout=90)
        assert done.returncode == 0, done.stderr[-2000:]
        found = [json.loads(line) for line in out.read_text().splitlines()]
        found.sort(key=lambda row: row["task_id"])  # rows are written as they finish
        outputs[name] = [{k: v for k, v in r.items() if k != "elapsed_s"} for r in found]
    assert outputs["ray"] == outputs["process"]
    assert [r["reward"] for r in outputs["ray"]] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]


# Batches: several samples per actor call --------------------------------------------------


def batched_score(verifier: Any, commands: list[str], workers: int = 2) -> list[Score]:
    """Score ``commands`` through a batched executor, first warming it up so that its queue
    knows the verifier's cost and sends real batches; checks the batch path ran."""
    executor = RayExecutor(workers=workers, max_batch=64)

    async def main() -> list[Score]:
        reward = Reward.of(verifier)
        warm = [(reward, Sample(TASK, as_completion(TASK, "ok 1"), i)) for i in range(200)]
        jobs = [(reward, Sample(TASK, as_completion(TASK, c), i)) for i, c in enumerate(commands)]
        async with executor:
            await ScoringEngine(executor).score(warm)
            scores = await ScoringEngine(executor).score(jobs)
            assert max(p.queue.peak for p in executor._pools.values()) > 1
        return scores

    return asyncio.run(main())


def assert_one_row_each(scores: list[Score], count: int) -> None:
    assert sorted(s.sample_index for s in scores) == list(range(count))


def test_batched_same_results_as_one_sample_per_call() -> None:
    commands = ["ok 0.5", "raise", "invalid", "range", "wrong_type", "ok 1"] * 20
    batched = batched_score(Behaviour({}), commands)
    single = score(Behaviour({}), commands, RayExecutor(workers=2, max_batch=1))
    assert rows(batched) == rows(single)
    assert_one_row_each(batched, len(commands))


def test_timeout_in_a_batch_is_only_its_sample() -> None:
    commands = ["ok 1"] * 60 + ["spin"] + ["ok 0.5"] * 60
    scores = batched_score(Behaviour({"timeout_s": 1.0}), commands)
    assert_one_row_each(scores, len(commands))
    statuses = [s.status for s in scores]
    assert statuses[60] == Status.TIMEOUT and "1.0s" in (scores[60].error or "")
    assert statuses[:60] + statuses[61:] == [Status.OK] * 120
    assert [s.reward for s in scores] == [1.0] * 60 + [0.0] + [0.5] * 60


def test_timeout_in_a_batch_of_an_async_verifier() -> None:
    commands = ["0.001"] * 40 + ["5"] + ["0.001"] * 40
    executor = RayExecutor(workers=1, max_batch=64)

    async def main() -> list[Score]:
        reward = Reward.of(Sleeper({"timeout_s": 1.0}))
        warm = [(reward, Sample(TASK, as_completion(TASK, "0"), i)) for i in range(100)]
        jobs = [(reward, Sample(TASK, as_completion(TASK, c), i)) for i, c in enumerate(commands)]
        async with executor:
            await ScoringEngine(executor).score(warm)
            scores = await ScoringEngine(executor).score(jobs)
            assert max(p.queue.peak for p in executor._pools.values()) > 1
        return scores

    scores = asyncio.run(main())
    assert_one_row_each(scores, len(commands))
    assert [s.status for s in scores] == [Status.OK] * 40 + [Status.TIMEOUT] + [Status.OK] * 40


def test_crash_in_a_batch_is_an_error_row_and_no_row_is_lost() -> None:
    commands = ["ok 1"] * 50 + ["exit"] + ["ok 0.5"] * 50 + ["exit"] + ["ok 1"] * 10
    scores = batched_score(Behaviour({}), commands)
    assert_one_row_each(scores, len(commands))
    errors = [i for i, s in enumerate(scores) if s.status == Status.ERROR]
    assert errors == [50, 101]
    assert all("actor died" in (scores[i].error or "") for i in errors)
    assert [s.reward for s in scores] == [1.0] * 50 + [0.0] + [0.5] * 50 + [0.0] + [1.0] * 10
