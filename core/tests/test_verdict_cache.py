"""The verdict cache: a deterministic verifier judges each distinct (task, completion) once
per engine (and once per cache file across processes); reused rows say so and keep their
first time; failures, other settings, other tasks and non-deterministic verifiers are
never served from it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rlv_cli_helpers import assert_user_error, io_args, rlv, write_jsonl

from rl_verifier import (
    Completion,
    InlineExecutor,
    InputFile,
    Reward,
    Sample,
    Status,
    Task,
    Verdict,
    Verifier,
    VerifierConfig,
)
from rl_verifier.scoring.engine import ScoringEngine
from rl_verifier.scoring.verdict_cache import Cached, DiskStore, VerdictCache

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


# -- what the key covers: files a setting names, verifiers that cannot be keyed -----------


class ListedConfig(VerifierConfig):
    words: InputFile = "words.txt"


class Listed(Verifier[ListedConfig]):
    """Reward 1 for a completion listed in the words file, read when first used."""

    name = "listed"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        words = Path(self.config.words).read_text().split()
        return Verdict.ok(float(completion.text() in words))


class Unkeyed(Counting):
    name = "unkeyed"

    def cache_inputs(self) -> dict[str, str] | None:
        return None


def test_a_rewritten_input_file_is_another_key(tmp_path: Path) -> None:
    words = tmp_path / "words.txt"
    words.write_text("4 5\n")
    shared = VerdictCache()
    first = Listed({"words": str(words)})
    assert [r["reward"] for r in score(["4"], first, cache=shared)] == [1.0]
    words.write_text("5\n")  # same path, other content: a new run's verifier sees it
    second = Listed({"words": str(words)})
    assert second.config_hash != first.config_hash
    [row] = score(["4"], second, cache=shared)
    assert row["reward"] == 0.0 and not row["info"].get("cached")  # type: ignore[union-attr]
    words.write_text("4 5\n")  # the first content again: its verdict again
    [again] = score(["4"], Listed({"words": str(words)}), cache=shared)
    assert again["reward"] == 1.0 and again["info"]["cached"]  # type: ignore[index]


def test_a_verifier_that_cannot_name_its_inputs_is_never_cached() -> None:
    shared = VerdictCache()
    score(["4"] * 3, Unkeyed(), cache=shared)
    score(["4"], Unkeyed(), cache=shared)
    assert Counting.calls == ["4"] * 4 and shared.hits == shared.misses == 0
    assert not Unkeyed().cacheable and Counting().cacheable


# -- rows read back from disk: corrupt or foreign ones are scored again -------------------


def verify_with_cache(tmp_path: Path, cache: Path, run: str) -> tuple[list[dict], str]:
    tasks = tmp_path / "tasks.jsonl"
    if not tasks.exists():
        write_jsonl(
            tasks,
            [{"id": f"t{i}", "prompt": "p", "reference": {"answer": str(i)}} for i in range(6)],
        )
        write_jsonl(
            tmp_path / "completions.jsonl",
            [{"task_id": f"t{i}", "completion": str(i % 2)} for i in range(6)],
        )
    out = tmp_path / f"{run}.jsonl"
    done = rlv(
        "verify", "--verifier", "exact_match", "--executor", "inline",
        *io_args(tasks, tmp_path / "completions.jsonl", out),
        env={"RLV_VERDICT_CACHE": str(cache)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = sorted((json.loads(line) for line in out.read_text().splitlines()),
                  key=lambda row: row["task_id"])  # fmt: skip
    return rows, done.stderr


def test_corrupt_and_foreign_rows_are_scored_again_with_one_warning(tmp_path: Path) -> None:
    cache = tmp_path / "verdicts.sqlite"
    first, _ = verify_with_cache(tmp_path, cache, "first")
    db = sqlite3.connect(cache)
    keys = [key for (key,) in db.execute("SELECT key FROM verdicts ORDER BY key")]
    assert len(keys) == 6
    spoiled = [
        "UPDATE verdicts SET verdict = '{not json' WHERE key = ?",
        'UPDATE verdicts SET verdict = \'{"status": "ok", "reward": 99}\' WHERE key = ?',
        'UPDATE verdicts SET verdict = \'{"status": "error"}\' WHERE key = ?',  # never kept
        'UPDATE verdicts SET verdict = \'{"reward": "1"}\' WHERE key = ?',  # a text reward
        "UPDATE verdicts SET verifier = 'format' WHERE key = ?",  # another verifier's row
        "UPDATE verdicts SET elapsed_s = 'slow' WHERE key = ?",
    ]
    for statement, key in zip(spoiled, keys, strict=True):
        db.execute(statement, (key,))
    db.commit()
    db.close()
    second, stderr = verify_with_cache(tmp_path, cache, "second")
    assert "Traceback" not in stderr
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and str(cache) in warnings[0], stderr
    assert not any(row["info"].get("cached") for row in second)
    judged = [(r["reward"], r["status"]) for r in second]
    assert judged == [(r["reward"], r["status"]) for r in first]
    third, stderr = verify_with_cache(tmp_path, cache, "third")  # rescored rows replaced them
    assert all(row["info"].get("cached") for row in third) and "WARNING" not in stderr


def test_a_cache_file_of_another_schema_is_used_as_no_cache(tmp_path: Path) -> None:
    cache = tmp_path / "other.sqlite"
    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE verdicts (id INTEGER PRIMARY KEY, note TEXT)")
    db.commit()
    db.close()
    rows, stderr = verify_with_cache(tmp_path, cache, "scores")
    assert [r["reward"] for r in rows] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "cannot read it" in warnings[0], stderr
    stats = rlv("cache", "stats", "--path", str(cache))
    assert_user_error(stats, str(cache), "cannot read it as a verdict cache")


def test_a_disk_row_a_verifier_could_not_return_is_a_miss(tmp_path: Path) -> None:
    store = DiskStore(tmp_path / "verdicts.sqlite")
    verifier = Counting()
    store.put("k", "counting", Cached(Verdict.ok(7.0), 0.1))  # outside reward_range
    assert store.get("k") is not None  # without a verifier only the row's form is checked
    assert VerdictCache(disk=store).get("k", verifier) is None
    store.put("k", "counting", Cached(Verdict.ok(1.0), 0.1))
    found = VerdictCache(disk=store).get("k", verifier)
    assert found is not None and found.verdict.reward == 1.0
