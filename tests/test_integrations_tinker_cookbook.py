"""tinker-cookbook: our Env/EnvGroupBuilder/RLDataset in the real ``tinker-cookbook``.

The status mapping is checked through the cookbook's own advantage and datum code; the
cookbook's own ``rl.train.main`` (unmodified) then trains the built-in model for two
steps against a local ``rlv serve``, offline.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tinker
from rlv_contexts import in_running_loop, on_thread
from rlv_group_verifiers import ShortestFirst
from rlv_test_verifiers import Behaviour, OpenFails
from tinker_cookbook import renderers
from tinker_cookbook.completers import TokensWithLogprobs
from tinker_cookbook.eval.benchmarks import BenchmarkConfig, load_trajectories, run_benchmark
from tinker_cookbook.rl import train
from tinker_cookbook.rl.data_processing import assemble_training_data, compute_advantages
from tinker_cookbook.rl.types import Trajectory, TrajectoryGroup, Transition
from tinker_cookbook.tokenizer_utils import get_tokenizer, register_tokenizer

from rl_verifier import Scorer, Task, Verifier
from rl_verifier.integrations.tinker_cookbook import (
    VerifierDatasetBuilder,
    VerifierEnv,
    VerifierGroupBuilder,
)
from rl_verifier.integrations.tinker_cookbook_eval import VerifierBenchmark

Register = Callable[[type[Verifier]], type[Verifier]]
MODEL = "rlv/tiny-chat"
RENDERER = "qwen3_instruct"  # the same ChatML bytes as the built-in model's template


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    """No model hub: Hugging Face loaders answer from local files only."""
    import huggingface_hub.constants

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        yield


@pytest.fixture(scope="module")
def tokenizer(offline: None) -> Any:
    """The cookbook's tokenizer for the built-in model. Where the cookbook's Hugging Face
    loader cannot find ``rlv/tiny-chat`` offline, the built-in files are registered under
    that name with the cookbook's own ``register_tokenizer`` (the test's only workaround)."""
    from transformers import AutoTokenizer

    from rl_verifier_server.models.tiny_model import ensure_tiny_model

    try:
        return get_tokenizer(MODEL)
    except OSError:  # not resolvable by name on this machine
        path = ensure_tiny_model()
        register_tokenizer(
            MODEL, lambda: AutoTokenizer.from_pretrained(path, local_files_only=True)
        )
        return get_tokenizer(MODEL)


def rollout(env: VerifierEnv, text: str, tokenizer: Any) -> tuple[Trajectory, Any]:
    """One episode with a scripted response, as the cookbook's rollout loop runs it."""
    ob, _ = asyncio.run(env.initial_observation())
    tokens = tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
    result = asyncio.run(env.step(tokens))
    transition = Transition(
        ob=ob,
        ac=TokensWithLogprobs(tokens=tokens, maybe_logprobs=[-1.0] * len(tokens)),
        reward=result.reward,
        episode_done=True,
        metrics=result.metrics,
    )
    return Trajectory(transitions=[transition], final_ob=tinker.ModelInput.empty()), result


def test_timeouts_are_masked_and_neutral_in_the_cookbooks_own_data_processing(
    register_verifier: Register, tokenizer: Any
) -> None:
    register_verifier(Behaviour)
    renderer = renderers.get_renderer(RENDERER, tokenizer)
    task = Task(id="t", prompt="Do as told.")
    with Scorer("behaviour", {"timeout_s": 1.0}, workers=2) as scorer:
        builder = VerifierGroupBuilder(task, scorer, renderer, group_size=4)
        envs = asyncio.run(builder.make_envs())
        texts = ["ok 1.0", "spin", "ok 0.0", "raise"]
        runs = [rollout(env, text, tokenizer) for env, text in zip(envs, texts, strict=True)]
        trajectories = [trajectory for trajectory, _ in runs]
        finals = asyncio.run(builder.compute_group_rewards(trajectories, envs))
    assert [r.metrics.get("parse_error_masked") for _, r in runs] == [None, 1.0, None, 1.0]
    assert runs[1][1].metrics["rlv/status/timeout"] == 1.0
    group = TrajectoryGroup(trajectories, [f for f, _ in finals], [m for _, m in finals])
    # the failed checks count as the judged mean (0.5): the others' advantages are unchanged
    assert group.get_total_rewards() == [1.0, 0.5, 0.0, 0.5]
    advantages = compute_advantages([group])
    assert advantages[0].tolist() == pytest.approx([0.5, 0.0, -0.5, 0.0])
    data, _ = assemble_training_data([group], advantages)
    masks = [d.loss_fn_inputs["mask"].to_torch() for d in data]
    weights = [d.loss_fn_inputs["advantages"].to_torch() for d in data]
    assert masks[0].sum() > 0 and masks[2].sum() > 0
    assert masks[1].sum() == 0 and masks[3].sum() == 0  # nothing of theirs trains
    assert weights[1].abs().sum() == 0 and weights[3].abs().sum() == 0


def test_cookbook_group_rewards_come_from_one_group_call(
    register_verifier: Register,
    tokenizer: Any,
) -> None:
    register_verifier(ShortestFirst)
    renderer = renderers.get_renderer(RENDERER, tokenizer)
    task = Task(id="t", prompt="Say hi.")
    with Scorer("shortest_first", executor="inline") as scorer:
        builder = VerifierGroupBuilder(task, scorer, renderer, group_size=3)
        envs = asyncio.run(builder.make_envs())
        runs = [
            rollout(env, text, tokenizer)
            for env, text in zip(envs, ["hello", "hi", "hey"], strict=True)
        ]
        assert [result.reward for _, result in runs] == [0.0, 0.0, 0.0]  # judged as a group
        finals = asyncio.run(builder.compute_group_rewards([t for t, _ in runs], envs))
    assert [reward for reward, _ in finals] == [0.0, 1.0, 0.5]
    assert finals[1][1]["rlv/status/ok"] == 1.0


def test_env_steps_off_the_main_thread_and_inside_a_running_loop(
    register_verifier: Register, tokenizer: Any
) -> None:
    """The cookbook awaits ``Env.step`` on its loop: a hang is killed at its 1 s
    deadline without blocking that loop, and the same holds on a worker thread's loop."""
    register_verifier(Behaviour)
    renderer = renderers.get_renderer(RENDERER, tokenizer)
    task = Task(id="t", prompt="Do as told.")

    async def steps(scorer: Scorer) -> list[str]:
        envs = [VerifierEnv(task, scorer, renderer) for _ in range(2)]
        actions = [
            tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
            for text in ("ok 0.5", "spin")
        ]
        results = await asyncio.gather(*(e.step(a) for e, a in zip(envs, actions, strict=True)))
        return [r.logs["rlv_status"] for r in results]

    with Scorer("behaviour", {"timeout_s": 1.0}, workers=2) as scorer:
        assert on_thread(lambda: asyncio.run(steps(scorer))) == ["ok", "timeout"]
        statuses, ticks = in_running_loop(lambda: steps(scorer))
    assert statuses == ["ok", "timeout"] and ticks >= 5


@pytest.fixture
def rlv_serve(tmp_path: Path) -> Iterator[str]:
    """A local ``rlv serve`` with the built-in model on a free port."""
    port_file = tmp_path / "port"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from rl_verifier.cli.app import main; main()",
            "serve",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--data-dir",
            str(tmp_path / "server"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text().strip():
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"rlv serve did not start: {child.stderr.read() if child.stderr else ''}"
                )
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}"
    finally:
        child.terminate()
        child.wait(30)


@pytest.mark.slow
def test_cookbook_rl_train_runs_against_rlv_serve(
    rlv_serve: str, tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tml-local")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    log_path = tmp_path / "run"
    config = train.Config(
        learning_rate=1e-3,
        dataset_builder=VerifierDatasetBuilder(
            tasks="taskset:calibration-example",
            spec="calibration",
            settings={"rule": "brier"},
            model_name_for_tokenizer=MODEL,
            renderer_name=RENDERER,
            batch_size=2,
            group_size=4,
            workers=2,
        ),
        model_name=MODEL,
        renderer_name=RENDERER,
        recipe_name="rl_verifier_test",
        max_tokens=12,
        log_path=str(log_path),
        base_url=rlv_serve,
        lora_rank=4,
        max_steps=2,
        eval_every=0,
        save_every=0,
    )
    asyncio.run(train.main(config))
    rows = [json.loads(line) for line in (log_path / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if any(key.endswith("rlv/status/ok") for key in row)]
    assert len(steps) == 2
    for row in steps:
        shares = {k.rsplit("/", 1)[1]: v for k, v in row.items() if "/rlv/status/" in k}
        assert sum(shares.values()) == pytest.approx(1.0)
        assert shares["timeout"] == shares["error"] == 0.0


@pytest.mark.slow
def test_cookbook_eval_runs_our_tasks_as_a_benchmark_against_rlv_serve(
    rlv_serve: str,
    tokenizer: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    register_verifier: Register,
) -> None:
    """The cookbook's own ``run_benchmark`` over two tasks: one judged, one whose check
    errors, which the cookbook records as an errored example, not a wrong answer."""
    register_verifier(OpenFails)
    monkeypatch.setenv("TINKER_API_KEY", "tml-local")
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "rain", "prompt": "Will it rain? Give a probability.", "verifier": "calibration",
         "reference": {"outcome": 1}},
        {"id": "broken", "prompt": "Anything.", "verifier": "open_fails"},
    ]  # fmt: skip
    tasks.write_text("".join(json.dumps(row) + "\n" for row in rows))
    benchmark = VerifierBenchmark("rlv_two", str(tasks), None, {"calibration": {"rule": "brier"}})
    service = tinker.ServiceClient(base_url=rlv_serve)
    sampler = service.create_sampling_client(base_model=MODEL)
    renderer = renderers.get_renderer(RENDERER, tokenizer)
    config = BenchmarkConfig(max_tokens=12, temperature=1.0, save_dir=str(tmp_path / "evals"))
    try:
        result = asyncio.run(run_benchmark(benchmark, sampler, renderer, config))
    finally:
        benchmark.close()
    assert result.num_examples == 2 and result.num_errors == 1
    assert result.metrics["rlv/status/ok"] + result.metrics["rlv/status/invalid"] == 1.0
    stored = {t.example_id: t for t in load_trajectories(str(tmp_path / "evals"), "rlv_two")}
    assert stored["broken"].error is not None and "rl-verifier error" in stored["broken"].error
    assert stored["rain"].error is None and stored["rain"].turns
