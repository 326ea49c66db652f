"""The real ``tinker-cookbook`` (its own ``rl.train.main`` and ``supervised.train.main``,
unmodified) against ``rlv serve`` with the built-in model: RL with the release's default
loss and rolling checkpoints, resume, SL, PPO with a KL penalty against the base model, async
(off-policy, ``stable_reinforce``) and streaming minibatches, with no failed request on the
server. The runs happen in one child process (``cookbook_runs.py``), two or three steps each.
``make test`` installs the cookbook (``core/requirements-integrations.txt``, without its
``tml-renderers>=0.4.1`` pin, which has no release here; 0.2.1 serves every non-Inkling
renderer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tinker
from rlv_renderers import assert_renderer_matches_template

from rl_verifier_server.launch import LocalServer
from rl_verifier_server.models.tiny_model import ensure_tiny_model

DRIVER = Path(__file__).with_name("cookbook_runs.py")
SCENARIOS = ("rl", "resume", "sl", "ppo_kl", "async", "streaming")


@dataclass
class Runs:
    work: Path
    results: dict[str, Any]
    server_log: str
    rest: tinker.RestClient
    data: Path

    def rows(self, scenario: str, name: str) -> list[dict[str, Any]]:
        text = (self.work / scenario / name).read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def config(self, scenario: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.work / scenario / "config.json").read_text())
        return data

    def ran(self, scenario: str) -> None:
        error = self.results.get(scenario, {"error": "did not run"})["error"]
        assert error is None, error


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    work = tmp_path_factory.mktemp("cookbook")
    env = {"HF_HUB_OFFLINE": "1"}  # no model hub here: Hugging Face loaders use the cache
    with LocalServer(work / "data", log_path=work / "server.log", env=env) as server:
        results_file = work / "results.json"
        child_env = {**os.environ, **env, "TINKER_API_KEY": "tml-local"}
        command = [sys.executable, str(DRIVER), server.url, str(work), str(results_file)]
        done = subprocess.run(
            [*command, *SCENARIOS], env=child_env, capture_output=True, text=True, timeout=600
        )
        assert results_file.exists(), done.stderr[-3000:]
        rest = tinker.RestClient(base_url=server.url, api_key="tml-local")
        yield Runs(
            work,
            json.loads(results_file.read_text()),
            (work / "server.log").read_text(),
            rest,
            work / "data",
        )


@pytest.mark.slow
def test_rl_with_the_default_loss_deletes_its_rolling_checkpoints(runs: Runs) -> None:
    runs.ran("rl")
    import chz
    from tinker_cookbook.rl.train import Config

    default_loss = chz.chz_fields(Config)["loss_fn"]._default
    assert runs.config("rl")["loss_fn"] == default_loss
    steps = [row for row in runs.rows("rl", "metrics.jsonl") if "optim/kl_sample_train_v1" in row]
    assert len(steps) == 2
    for row in steps:  # sampler and trainer agree on the logprobs of what was sampled
        assert abs(row["optim/kl_sample_train_v1"]) < 1e-4
    saved = runs.rows("rl", "checkpoints.jsonl")
    rolling = [row["state_path"] for row in saved if row.get("rolling")]
    assert len(rolling) == 2
    checkpoints = runs.rest.list_user_checkpoints(limit=1000).result().checkpoints
    listed = {c.tinker_path for c in checkpoints}
    for path in rolling:
        assert path not in listed
        run, kind, name = path.removeprefix("tinker://").split("/")
        assert not (runs.data / "runs" / run / kind / name).exists()


def test_a_run_resumes_from_its_checkpoint_with_its_renderer(runs: Runs) -> None:
    runs.ran("resume")
    batches = [row["batch"] for row in runs.rows("resume", "checkpoints.jsonl")]
    assert batches[-1] == 3 and 2 in batches
    logs = (runs.work / "resume" / "logs.log").read_text()
    assert "Resumed training from" in logs
    assert "Renderer metadata matches for checkpoint" in logs  # user_metadata came back


def test_supervised_learning(runs: Runs) -> None:
    runs.ran("sl")
    steps = runs.rows("sl", "metrics.jsonl")
    assert len(steps) == 2 and all(row["num_loss_tokens"] > 0 for row in steps)


def test_ppo_with_a_kl_penalty_against_the_base_model(runs: Runs) -> None:
    runs.ran("ppo_kl")
    assert runs.config("ppo_kl")["loss_fn"] == "ppo"
    assert any("kl_policy_base" in row for row in runs.rows("ppo_kl", "metrics.jsonl"))


def test_async_off_policy_training_with_stable_reinforce(runs: Runs) -> None:
    runs.ran("async")
    assert runs.config("async")["async_config"]["loss_fn"] == "stable_reinforce"
    steps = [row for row in runs.rows("async", "metrics.jsonl") if "async/staleness_max" in row]
    assert len(steps) == 2


def test_streaming_minibatches(runs: Runs) -> None:
    runs.ran("streaming")
    steps = [r for r in runs.rows("streaming", "metrics.jsonl") if "optim/kl_sample_train_v1" in r]
    assert len(steps) == 2


def test_no_request_failed_on_the_server(runs: Runs) -> None:
    assert all(result["error"] is None for result in runs.results.values())
    failures = [
        line
        for line in runs.server_log.splitlines()
        if " -> " in line or "failed (" in line or " ERROR " in line
    ]
    assert failures == []


def test_qwen3_instruct_renders_the_builtin_models_chat_template() -> None:
    """The renderer to name for rlv/tiny-chat: byte for byte its own ChatML template."""
    tokenizer, text = assert_renderer_matches_template(ensure_tiny_model(), "qwen3_instruct")
    prompt = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(prompt) == text
