"""verl: compute_score and compute_score_batch through the real ``verl`` package's own
reward loading (``load_reward_manager`` with ``pkg://`` paths and ``reward_kwargs``), its
reward-loop ``NaiveRewardManager`` and its ``BatchRewardManager``.

verl is installed without its GPU stack (``--no-deps``, see core/requirements-integrations.txt);
its reward managers need only torch (CPU), tensordict, omegaconf and ray.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rlv_contexts import in_running_loop, on_thread
from rlv_test_verifiers import Behaviour
from rlv_verl import batch, final_rewards, verl_config
from verl.trainer.ppo.reward import load_reward_manager
from verl.workers.reward_manager import BatchRewardManager

from rl_verifier import UserError, Verifier
from rl_verifier.integrations import verl as rlv_verl
from rl_verifier.integrations.verl import compute_score, compute_score_async, compute_score_batch

Register = Callable[[type[Verifier]], type[Verifier]]
ROUTES = {"forecasts": "calibration", "trivia": "exact_match", "slow": "behaviour"}
SETTINGS = {"calibration": {"rule": "brier"}, "behaviour": {"timeout_s": 1.0}}
# (data_source, response, ground_truth, extra_info)
SAMPLES: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("forecasts", "<probability>0.9</probability>", {"outcome": 1}, {"index": 0}),
    ("trivia", "<answer>Paris</answer>", "Paris", {"index": 1, "question": "Capital?"}),
    ("trivia", "<answer>Lyon</answer>", "Paris", {"index": 1, "question": "Capital?"}),
    ("slow", "spin", "x", {"index": 2}),
    ("slow", "ok 0.75", "x", {"index": 2}),
]
EXPECTED = [1 - 0.1**2, 1.0, 0.0, 0.0, 0.75]
KEYS = {"score", "rlv_status", "rlv_judged", "rlv_spec", "rlv_components"}


@pytest.fixture(autouse=True)
def behaviour(register_verifier: Register) -> Iterator[None]:
    register_verifier(Behaviour)
    yield
    rlv_verl.close_scorers()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    return AutoTokenizer.from_pretrained(ensure_tiny_model(), local_files_only=True)


def test_compute_score_routes_by_data_source_with_the_same_keys_everywhere() -> None:
    results = [
        compute_score(source, text, truth, info, routes=ROUTES, settings=SETTINGS, workers=2)
        for source, text, truth, info in SAMPLES
    ]
    assert [r["score"] for r in results] == pytest.approx(EXPECTED)
    assert all(set(r) == KEYS for r in results)
    assert [r["rlv_spec"] for r in results] == [ROUTES[s[0]] for s in SAMPLES]
    assert results[3]["rlv_status"] == "timeout" and results[3]["rlv_judged"] == 0.0
    assert results[0]["rlv_components"]["brier"] == pytest.approx(0.99)
    # a data source that is a verifier's name routes to it; extra_info.verifier too
    direct = compute_score("exact_match", "Paris", "Paris", executor="inline")
    named = compute_score("mine", "Paris", "Paris", {"verifier": "exact_match"}, executor="inline")
    assert direct["score"] == named["score"] == 1.0
    with pytest.raises(UserError, match="names no verifier"):
        compute_score("openai/gsm8k", "4", "4")


def test_off_the_main_thread_and_inside_a_running_loop() -> None:
    """verl runs ``compute_score`` on an executor thread and awaits ``compute_score_async``
    on its reward loop: a hang is killed at its 1 s deadline there, and the loop runs on."""
    slow = [s for s in SAMPLES if s[0] == "slow"]
    kwargs: dict[str, Any] = {"routes": ROUTES, "settings": SETTINGS, "workers": 2}

    def each() -> list[str]:
        return [compute_score(*sample, **kwargs)["rlv_status"] for sample in slow]

    async def together() -> list[str]:
        results = await asyncio.gather(*(compute_score_async(*s, **kwargs) for s in slow))
        return [r["rlv_status"] for r in results]

    assert on_thread(each) == ["timeout", "ok"]
    assert on_thread(lambda: asyncio.run(together())) == ["timeout", "ok"]
    statuses, ticks = in_running_loop(together)
    assert statuses == ["timeout", "ok"] and ticks >= 5


def test_named_components_become_numeric_columns() -> None:
    judged = compute_score(
        "forecasts",
        "Probability: 0.5",
        {"outcome": 0},
        routes=ROUTES,
        components=["brier", "log"],
        executor="inline",
    )
    invalid = compute_score(
        "forecasts",
        "no idea",
        {"outcome": 0},
        routes=ROUTES,
        components=["brier", "log"],
        executor="inline",
    )
    assert judged["brier"] == pytest.approx(0.75) and judged["log"] == pytest.approx(0.0)
    assert invalid["brier"] is None and set(invalid) == set(judged)


@pytest.mark.parametrize("name", ["compute_score", "compute_score_async"])
def test_verl_loads_it_and_its_reward_loop_manager_scores_with_it(
    tokenizer: Any, name: str
) -> None:
    config = verl_config(name, {"routes": ROUTES, "settings": SETTINGS, "workers": 2})
    data = batch(tokenizer, SAMPLES)

    async def run() -> list[dict[str, Any]]:
        manager = load_reward_manager(config, tokenizer)
        assert type(manager).__name__ == "NaiveRewardManager"
        assert manager.is_async_reward_score == (name == "compute_score_async")
        return list(
            await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data))))
        )

    outputs = asyncio.run(run())
    assert [o["reward_score"] for o in outputs] == pytest.approx(EXPECTED)
    extra = [o["reward_extra_info"] for o in outputs]
    assert [e["rlv_status"] for e in extra] == ["ok", "ok", "ok", "timeout", "ok"]
    assert all(set(e) == KEYS for e in extra)


def test_batch_reward_manager_fills_failed_checks_with_their_group_mean(tokenizer: Any) -> None:
    manager = BatchRewardManager(
        tokenizer,
        num_examine=0,
        compute_score=compute_score_batch,
        routes=ROUTES,
        settings=SETTINGS,
        workers=2,
    )
    data = batch(tokenizer, SAMPLES)
    out = manager(data, return_dict=True)
    rewards = final_rewards(data, out["reward_tensor"])
    # the timed-out response gets the mean of its prompt's judged responses (0.75)
    assert rewards == pytest.approx([0.99, 1.0, 0.0, 0.75, 0.75])
    assert out["reward_tensor"].sum().item() == pytest.approx(sum(rewards))
    assert out["reward_extra_info"]["rlv_status"] == ["ok", "ok", "ok", "timeout", "ok"]
    assert out["reward_extra_info"]["rlv_judged"] == [1.0, 1.0, 1.0, 0.0, 1.0]


def test_batch_variant_can_score_failures_as_zero() -> None:
    results = compute_score_batch(
        [s[0] for s in SAMPLES],
        [s[1] for s in SAMPLES],
        [s[2] for s in SAMPLES],
        [s[3] for s in SAMPLES],
        routes=ROUTES,
        settings=SETTINGS,
        failed="zero",
        workers=2,
    )
    assert [r["score"] for r in results] == pytest.approx(EXPECTED)


def test_references_from_verl_fields() -> None:
    from rl_verifier.integrations.verl import make_task

    assert make_task("code", '{"tests": "t"}', None).reference == {"tests": "t"}
    assert make_task("s", {"a": None, "b": 2}, None).reference == {"b": 2}
    task = make_task("s", "5", {"index": 3, "question": "q", "reference": {"x": None, "k": 1}})
    assert task.reference == {"answer": "5", "k": 1}
    assert task.id == "s:3" and task.prompt == "q"
