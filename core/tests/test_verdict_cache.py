"""The verdict cache: a deterministic verifier judges each distinct (task, completion) once
per engine (and once per cache file across processes); reused rows say so and keep their
first time; failures, other settings, other tasks and non-deterministic verifiers are
never served from it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rlv_cli_helpers import io_args, rlv, write_jsonl

from rl_verifier import (
    Completion,
    InlineExecutor,
    Reward,
    Sample,
    Status,
    Task,
    Verdict,
    Verifier,
    VerifierConfig,
)
from rl_verifier.engine import ScoringEngine
from rl_verifier.verdict_cache import DiskStore, VerdictCache

Register = Callable[[type[Verifier]], type[Verifier]]


class CountingConfig(VerifierConfig):
    answer: str = "4"


class Counting(Verifier[CountingConfig]):
    """Reward 1 for the configured answer; counts its calls; 'boom' fails once."""

    name = "counting"
    calls: list[str] = []
    lock = threading.Lock()

    def verify(self, task: Task, completion: Completion) -> Verdict:
        text = completion.text()
        with self.lock:
            self.calls.append(text)
            first_boom = text == "boom" and self.calls.count("boom") == 1
        time.sleep(0.02)
        if first_boom:
            raise RuntimeError("the verifier's infrastructure failed")
        return Verdict.ok(float(text == self.config.answer))


class Wobbly(Counting):
    name = "wobbly"
    deterministic = False


def task(reference: str = "x") -> Task:
    return Task(id="t", prompt="2+2?", reference={"answer": reference})


def score(
    texts: list[str], verifier: Verifier, cache: VerdictCache | bool = True, t: Task | None = None
) -> list[dict[str, object]]:
    t = t or task()
    samples = [Sample(t, Completion(task_id=t.id, completion=x), i) for i, x in enumerate(texts)]

    async def run() -> list[dict[str, object]]:
        async with InlineExecutor() as executor:
            engine = ScoringEngine(executor, cache=cache)
            scores = await engine.score((Reward.of(verifier), s) for s in samples)
        return [s.model_dump() for s in scores]

    return asyncio.run(run())


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    Counting.calls = []


def test_a_group_of_identical_completions_is_judged_once() -> None:
    rows = score(["4"] * 8 + ["5"] * 4, Counting())
    assert sorted(Counting.calls) == ["4", "5"]
    assert [r["reward"] for r in rows] == [1.0] * 8 + [0.0] * 4
    reused = [r for r in rows if r["info"].get("cached")]  # type: ignore[union-attr]
    assert len(reused) == 10
    first = next(r for r in rows if not r["info"].get("cached"))  # type: ignore[union-attr]
    assert first["elapsed_s"] >= 0.02  # type: ignore[operator]
    assert all(r["elapsed_s"] >= 0.02 for r in reused)  # type: ignore[operator]


def test_the_cache_lasts_the_engines_life_and_can_be_turned_off() -> None:
    shared = VerdictCache()
    score(["4", "5"], Counting(), cache=shared)
    again = score(["4", "5"], Counting(), cache=shared)
    assert len(Counting.calls) == 2 and all(r["info"]["cached"] for r in again)  # type: ignore[index]
    Counting.calls = []
    score(["4"] * 3, Counting(), cache=False)
    assert Counting.calls == ["4"] * 3
    assert shared.hits == 2 and shared.misses == 2


def test_non_deterministic_verifiers_and_failures_are_never_reused() -> None:
    score(["4"] * 3, Wobbly())
    assert Wobbly.calls == ["4"] * 3
    Counting.calls = []
    shared = VerdictCache()
    first = score(["boom"], Counting(), cache=shared)
    second = score(["boom"], Counting(), cache=shared)
    assert first[0]["status"] is Status.ERROR and second[0]["status"] is Status.OK
    assert Counting.calls == ["boom", "boom"]


def test_other_settings_and_other_tasks_are_other_keys() -> None:
    shared = VerdictCache()
    score(["4"], Counting(), cache=shared)
    score(["4"], Counting({"answer": "5"}), cache=shared)
    score(["4"], Counting(), cache=shared, t=task("y"))
    assert Counting.calls == ["4"] * 3
    score(["4"], Counting({"timeout_s": 99}), cache=shared)  # execution settings only
    assert Counting.calls == ["4"] * 3


def test_the_disk_store_is_shared_bounded_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.sqlite"
    store = DiskStore(path, max_entries=10)
    score(["4", "5"], Counting(), cache=VerdictCache(disk=store))
    store.close()
    reopened = DiskStore(path)
    rows = score(["4", "5"], Counting(), cache=VerdictCache(disk=reopened))
    assert len(Counting.calls) == 2 and all(r["info"]["cached"] for r in rows)  # type: ignore[index]
    assert reopened.stats()["entries"] == 2
    small = DiskStore(path, max_entries=10)
    many = [str(i) for i in range(1500)]
    score(many, Counting(), cache=VerdictCache(entries=5, disk=small))
    assert small.stats()["entries"] <= 10 + 500  # pruned every 1,000 writes to the bound
    assert small.clear() > 0 and small.stats()["entries"] == 0


def test_rlv_verify_reuses_the_disk_cache_across_processes(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "verdicts.sqlite"
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "prompt": "p", "reference": {"answer": str(i)}} for i in range(5)],
    )
    completions = write_jsonl(
        tmp_path / "completions.jsonl",
        [{"task_id": f"t{i}", "completion": str(i % 3)} for i in range(5)],
    )
    env = {"RLV_VERDICT_CACHE": str(cache)}
    outs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.jsonl"
        done = rlv("verify", "--verifier", "exact_match", *io_args(tasks, completions, out),
                   env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        outs.append(sorted(rows, key=lambda row: row["task_id"]))  # written as they finish
    assert not any(row["info"].get("cached") for row in outs[0])
    assert all(row["info"].get("cached") for row in outs[1])
    strip = [{k: v for k, v in r.items() if k != "info"} for r in outs[0]]
    assert strip == [{k: v for k, v in r.items() if k != "info"} for r in outs[1]]
    stats = rlv("cache", "stats", env=env)
    assert stats.returncode == 0 and json.loads(stats.stdout)["entries"] == 5
    cleared = rlv("cache", "clear", "--path", str(cache))
    assert cleared.returncode == 0 and "removed 5" in cleared.stdout
    missing = rlv("cache", "stats", env={"RLV_VERDICT_CACHE": ""})
    assert missing.returncode != 0 and "RLV_VERDICT_CACHE" in missing.stderr
