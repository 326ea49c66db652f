"""rl_verifier.Scorer: scoring from Python, one sample or many, sync or async, from any
thread, with the process executor's hard timeouts and statuses."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from rlv_processes import workers_of_this_process
from rlv_test_verifiers import Behaviour

import rl_verifier
from rl_verifier import Completion, Scorer, Status, Task, UserError, Verdict, Verifier

Register = Callable[[type[Verifier]], type[Verifier]]


def brier(p: float, outcome: int) -> float:
    return 1 - (p - outcome) ** 2


def test_scores_dicts_text_chat_and_contract_objects() -> None:
    task = Task(id="rain", prompt="Will it rain?", reference={"outcome": 1})
    with Scorer("calibration", {"rule": "brier"}, workers=2) as scorer:
        plain = scorer.score(
            {"prompt": "Will it rain?", "reference": {"outcome": 1}}, "Probability: 0.7"
        )
        chat = scorer.score(
            task, [{"role": "assistant", "content": "<probability>0.6</probability>"}]
        )
        typed = scorer.score(task, Completion(task_id="rain", completion="Probability: 0.1"))
    assert plain.status is Status.OK and plain.reward == pytest.approx(brier(0.7, 1))
    assert chat.task_id == "rain" and chat.reward == pytest.approx(brier(0.6, 1))
    assert typed.reward == pytest.approx(brier(0.1, 1))
    assert plain.verifier.name == "calibration" and plain.verifier.config_hash
    assert plain.components["brier"] == pytest.approx(brier(0.7, 1))


def test_score_many_keeps_order_and_numbers_samples_per_task() -> None:
    yes = {"id": "yes", "prompt": "q", "reference": {"outcome": 1}}
    no = {"id": "no", "prompt": "q", "reference": {"outcome": 0}}
    pairs = [(yes, "Probability: 0.9"), (no, "Probability: 0.9"), (yes, "Probability: 0.2")]
    with Scorer("calibration", workers=2) as scorer:
        scores = scorer.score_many(pairs)
    assert [(s.task_id, s.sample_index) for s in scores] == [("yes", 0), ("no", 0), ("yes", 1)]
    assert [s.reward for s in scores] == pytest.approx(
        [brier(0.9, 1), brier(0.9, 0), brier(0.2, 1)]
    )


def test_hung_and_crashing_checks_get_their_status_and_the_scorer_goes_on(
    register_verifier: Register,
) -> None:
    register_verifier(Behaviour)
    task = {"id": "t", "prompt": "p"}
    with Scorer("behaviour", {"timeout_s": 1.0}, workers=2) as scorer:
        scores = scorer.score_many(
            [(task, "spin"), (task, "sleep_c"), (task, "raise"), (task, "exit"), (task, "ok 0.5")]
        )
        after = scorer.score(task, "ok 0.25")
    statuses = [s.status for s in scores]
    assert statuses == [Status.TIMEOUT, Status.TIMEOUT, Status.ERROR, Status.ERROR, Status.OK]
    assert scores[4].reward == 0.5
    assert all(s.reward == 0.0 for s in scores[:4])
    assert "verifier bug" in (scores[2].error or "")
    assert after.status is Status.OK and after.reward == 0.25


def test_composite_spec_reports_components_and_worst_status(register_verifier: Register) -> None:
    register_verifier(Behaviour)
    with Scorer(
        "0.5*behaviour + 0.5*format", {"format": {"pattern": "ok.*"}}, executor="inline"
    ) as scorer:
        good = scorer.score({"prompt": "p"}, "ok 1.0")
        failed = scorer.score({"prompt": "p"}, "raise")
    assert good.status is Status.OK and good.reward == pytest.approx(1.0)
    assert good.components == {"behaviour": 1.0, "format": 1.0}
    assert failed.status is Status.ERROR and failed.components["format"] == 0.0


def test_sync_calls_from_many_threads_and_async_calls_from_many_loops() -> None:
    task = {"id": "t", "prompt": "q", "reference": {"outcome": 1}}
    results: dict[str, float] = {}
    with Scorer("calibration", workers=2) as scorer:

        def sync_caller(n: int) -> None:
            p = n / 10
            results[f"sync{n}"] = scorer.score(task, f"Probability: {p}").reward

        def async_caller(n: int) -> None:
            async def main() -> list[float]:
                scores = await asyncio.gather(
                    scorer.ascore(task, f"Probability: {n / 10}"),
                    scorer.ascore_many([(task, f"Probability: {n / 10}")] * 2),
                )
                return [scores[0].reward, *(s.reward for s in scores[1])]

            results[f"async{n}"] = sum(asyncio.run(main())) / 3

        threads = [threading.Thread(target=sync_caller, args=(n,)) for n in range(1, 9)]
        threads += [threading.Thread(target=async_caller, args=(n,)) for n in range(1, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(results) == 12
    for key, reward in results.items():
        n = int(key.removeprefix("sync").removeprefix("async"))
        assert reward == pytest.approx(brier(n / 10, 1)), key


class Tracked(Verifier):
    """Counts open() and close() calls across a scorer's life."""

    name = "tracked"
    opened = 0
    closed = 0

    async def open(self) -> None:
        type(self).opened += 1

    async def close(self) -> None:
        type(self).closed += 1

    def verify(self, task: Task, completion: Completion) -> Verdict:
        return Verdict.ok(1.0)


def test_verifiers_open_once_and_close_with_the_scorer(register_verifier: Register) -> None:
    register_verifier(Tracked)
    Tracked.opened = Tracked.closed = 0
    scorer = Scorer("tracked", executor="inline")
    for _ in range(3):
        scorer.score({"prompt": "p"}, "x")
    scorer.score_many([({"prompt": "p"}, "x")] * 5)
    assert (Tracked.opened, Tracked.closed) == (1, 0)
    scorer.close()
    assert (Tracked.opened, Tracked.closed) == (1, 1)
    scorer.close()  # twice is fine
    with pytest.raises(UserError, match="closed"):
        scorer.score({"prompt": "p"}, "x")


def test_close_stops_the_worker_processes() -> None:
    scorer = Scorer("calibration", workers=2)
    scorer.score_many([({"prompt": "q", "reference": {"outcome": 1}}, "Probability: 0.5")] * 4)
    assert sorted(workers_of_this_process())
    scorer.close()
    assert sorted(workers_of_this_process()) == []


EXIT_SCRIPT = """
import sys
from pathlib import Path

from rl_verifier import Scorer, Verdict, Verifier
from rl_verifier.discovery.plugins import get_plugins


class Closing(Verifier):
    name = "closing"

    async def close(self) -> None:
        Path(sys.argv[1]).write_text("closed")

    def verify(self, task, completion):
        return Verdict.ok(1.0)


get_plugins().registry.add(Closing.name, Closing, "test", "0")
scorer = Scorer("closing", executor="inline")
print(scorer.score({"prompt": "p"}, "x").reward)  # and exit without closing it
"""


def test_scorers_left_open_are_closed_at_interpreter_exit(tmp_path: Path) -> None:
    marker = tmp_path / "closed"
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(marker)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"
    assert marker.read_text() == "closed"  # the opened verifier was closed at exit


def test_without_a_spec_each_task_names_its_verifier() -> None:
    tasks = [
        {"prompt": "q", "verifier": "calibration", "reference": {"outcome": 0}},
        {"prompt": "q", "verifier": "exact_match", "reference": {"answer": "Paris"}},
    ]
    with Scorer(None, {"calibration": {"rule": "brier"}}, executor="inline") as scorer:
        forecast, answer = scorer.score_many(
            [(tasks[0], "Probability: 0.25"), (tasks[1], "<answer>paris</answer>")]
        )
        with pytest.raises(UserError, match="names no verifier"):
            scorer.score({"prompt": "q"}, "x")
    assert forecast.reward == pytest.approx(brier(0.25, 0))
    assert answer.verifier.name == "exact_match" and answer.reward == 1.0


def test_bad_input_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown verifier"):
        Scorer("no_such_verifier")
    with pytest.raises(UserError):
        Scorer("calibration", {"rule": "nonsense"})
    with Scorer("calibration", executor="inline") as scorer:
        with pytest.raises(UserError, match="prompt"):
            scorer.score({"id": "x"}, "Probability: 0.5")
        with pytest.raises(UserError, match="completion"):
            scorer.score({"prompt": "q"}, 42)  # type: ignore[arg-type]


def test_a_pickled_scorer_starts_afresh_with_the_same_configuration() -> None:
    with Scorer("calibration", {"rule": "log"}, executor="inline") as scorer:
        task = {"prompt": "q", "reference": {"outcome": 1}}
        before = scorer.score(task, "Probability: 0.5")
        copy = pickle.loads(pickle.dumps(scorer))
    with copy:
        after = copy.score(task, "Probability: 0.5")
    assert after.reward == before.reward == pytest.approx(0.0)
    assert after.verifier == before.verifier


def test_public_names() -> None:
    assert {"Scorer", "TaskLike", "CompletionLike"} <= set(rl_verifier.__all__)
