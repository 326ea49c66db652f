"""TRL: rl-verifier reward functions in the real ``trl`` package's GRPOTrainer.

The GRPO run trains the built-in tiny model (saved as a Hugging Face checkpoint, offline)
for two steps on CPU with rewards from ``calibration`` and from ``pytest`` (sandboxed).
The untrained model writes no code, so it first memorises one answer per prompt in a few
supervised steps; sampling at temperature 1 then gives passing and failing programs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rlv_contexts import in_running_loop, on_thread
from rlv_test_verifiers import Behaviour
from trl.trainer.utils import get_callable_name, is_async_callable

from rl_verifier import Verifier
from rl_verifier.integrations.trl import reward_func, task_from_row

Register = Callable[[type[Verifier]], type[Verifier]]
CODE = "```python\ndef add(a, b):\n    return a + b\n```"
FORECAST = "<probability>0.8</probability>"
TESTS = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
CODE_PROMPT = "Write add(a, b) in a python block."
RAIN_PROMPT = "Will it rain tomorrow? Give a probability."


def call(func: Any, **kwargs: Any) -> Any:
    """Call a reward function as TRL does (async ones on an event loop)."""
    import asyncio

    result = func(**kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def test_trl_sees_an_async_reward_function_with_a_readable_name() -> None:
    func = reward_func("0.8*pytest + 0.2*format")
    assert is_async_callable(func)
    assert get_callable_name(func) == "rlv_pytest_format"
    assert not is_async_callable(reward_func("calibration", asynchronous=False))


def test_conversational_rows_with_columns_and_trl_keywords() -> None:
    logged: dict[str, float] = {}
    extra: dict[str, list[Any]] = {}
    func = reward_func("calibration", rule="brier", executor="inline")
    prompts = [[{"role": "user", "content": RAIN_PROMPT}]] * 3
    completions = [
        [{"role": "assistant", "content": "<probability>0.8</probability>"}],
        [{"role": "assistant", "content": "no idea"}],
        [{"role": "assistant", "content": "Probability: 0.3"}],
    ]
    rewards = call(
        func,
        prompts=prompts,
        completions=completions,
        completion_ids=[[1], [2], [3]],
        outcome=[1, 1, 0],
        trainer_state=object(),
        log_metric=lambda name, value: logged.__setitem__(name, value),
        log_extra=lambda column, values: extra.__setitem__(column, values),
    )
    assert rewards == pytest.approx([1 - 0.2**2, -0.1, 1 - 0.3**2])
    assert extra == {"rlv_calibration_status": ["ok", "invalid", "ok"]}
    assert logged["rlv_calibration/status/invalid"] == pytest.approx(1 / 3)
    assert logged["rlv_calibration/brier"] == pytest.approx((0.96 + 0.91) / 2)


def test_timeout_and_error_are_none_so_trl_skips_them(register_verifier: Register) -> None:
    register_verifier(Behaviour)
    func = reward_func("behaviour", timeout_s=1.0, workers=2)
    rewards = call(func, prompts=["p"] * 4, completions=["ok 0.5", "spin", "raise", "invalid"])
    assert rewards == [0.5, None, None, 0.0]


COMMANDS = ["ok 0.5", "spin", "ok 1.0"]


def test_off_the_main_thread_and_inside_a_running_loop(register_verifier: Register) -> None:
    """As TRL 1.16 runs it (its async reward functions are awaited on a loop of its own
    thread): the hang is killed at its 1 s deadline and the loop keeps running."""
    register_verifier(Behaviour)
    func = reward_func("behaviour", timeout_s=1.0, workers=2)
    sync = reward_func("behaviour", asynchronous=False, scorer=func.scorer)
    try:
        kwargs: dict[str, Any] = {"prompts": ["p"] * 3, "completions": COMMANDS}
        assert on_thread(lambda: call(func, **kwargs)) == [0.5, None, 1.0]
        assert on_thread(lambda: sync(**kwargs)) == [0.5, None, 1.0]
        rewards, ticks = in_running_loop(lambda: func(**kwargs))
        assert rewards == [0.5, None, 1.0] and ticks >= 5
    finally:
        func.scorer.close()


def test_task_fields_from_columns() -> None:
    row = {"id": 7, "reference": {"outcome": 1, "tests": None}, "answer": "x"}
    assert task_from_row("q", row).reference == {"outcome": 1}
    assert task_from_row("q", row).id == "7"
    named = task_from_row("q", {"answer": "Paris", "level": 3}, reference_columns=["answer"])
    assert named.reference == {"answer": "Paris"}
    every = task_from_row("q", {"answer": "Paris", "verifier": "exact_match"})
    assert every.reference == {"answer": "Paris"} and every.verifier == "exact_match"
    assert task_from_row("q", {}).id == task_from_row("q", {"answer": 1}).id  # same prompt


def memorised_tiny_model(out: Path) -> Path:
    """The built-in tiny model after a few supervised steps on one answer per prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    base = ensure_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    torch.manual_seed(0)
    examples = []
    for prompt, answer in ((CODE_PROMPT, CODE), (RAIN_PROMPT, FORECAST)):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(answer + "<|im_end|>", add_special_tokens=False)["input_ids"]
        examples.append(
            (
                torch.tensor([prompt_ids + answer_ids]),
                torch.tensor([[-100] * len(prompt_ids) + answer_ids]),
            )
        )
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(40):
        loss = sum(model(input_ids=ids, labels=labels).loss for ids, labels in examples)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.mark.slow
def test_grpo_trainer_trains_on_calibration_and_sandboxed_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model_dir = memorised_tiny_model(tmp_path / "model")
    dataset = Dataset.from_list(
        [
            {"prompt": [{"role": "user", "content": CODE_PROMPT}], "tests": TESTS, "outcome": None},
            {"prompt": [{"role": "user", "content": RAIN_PROMPT}], "tests": None, "outcome": 1},
        ]
    )
    code_reward = reward_func(
        "0.8*pytest + 0.2*format",
        reference_columns=["tests"],
        format={"pattern": r"(?s)```python\n.*```"},
        workers=2,
    )
    forecast_reward = reward_func("calibration", reference_columns=["outcome"], workers=2)
    config = GRPOConfig(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=24,
        max_steps=2,
        learning_rate=1e-4,
        use_cpu=True,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=[code_reward, forecast_reward],
        args=config,
        train_dataset=dataset,
    )
    try:
        trainer.train()
    finally:
        code_reward.scorer.close()
        forecast_reward.scorer.close()
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(steps) == 2
    for entry in steps:
        # each function judged its own rows; the other rows are None (skipped), not 0
        assert (
            entry["rlv_pytest_format/status/ok"] + entry["rlv_pytest_format/status/invalid"] == 0.5
        )
        assert entry["rlv_calibration/status/ok"] + entry["rlv_calibration/status/invalid"] == 0.5
        assert entry["rlv_calibration/status/timeout"] == 0.0
        assert {"rlv_pytest_format/pytest", "rlv_pytest_format/format"} <= set(entry)
        assert "rewards/rlv_pytest_format/mean" in entry
    # pytest ran the programs in its sandbox: at least one sampled program passed
    assert max(entry["rlv_pytest_format/pytest"] for entry in steps) > 0
    assert any("rlv_calibration/brier" in entry for entry in steps)
