"""Each kind of extension is one registration in one plugin: a toy of each kind, from one
test plugin loaded the way an entry point is (``register_plugin``), reaches the code that
uses it: verifiers, task sets, environments with settings, losses (core and ``rlv serve``),
sandbox backends, reward-server protocols, builder presets and commands."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click
import pytest
from pydantic import BaseModel, ConfigDict

from rl_verifier import (
    Completion,
    EnvironmentRegistrar,
    Loss,
    LossRegistrar,
    Preset,
    PresetRegistrar,
    RewardProtocol,
    RewardProtocolRegistrar,
    SandboxBackendRegistrar,
    Score,
    Task,
    TaskSetRegistrar,
    UserError,
    Verdict,
    Verifier,
    VerifierConfig,
    VerifierRegistrar,
    hookimpl,
    reward_for,
)
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.scoring.resolve import environment, load_task_source
from rl_verifier.train.config import validate


class ToyLength(Verifier[VerifierConfig]):
    """Reward 1 for a completion of at most five characters."""

    name = "toy_length"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        return Verdict.ok(1.0 if len(completion.text()) <= 5 else 0.0)


class ToySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"


class ToySandbox:
    def __init__(self, options: Any) -> None:
        self.options = options


def toy_batch(raw: bytes) -> Any:
    from rl_verifier.reward_server.wire import typed_batch

    return typed_batch(raw)


def toy_answer(scores: list[Score], options: Any) -> bytes:
    return json.dumps({"toy": [s.reward for s in scores]}).encode()


class ToyPlugin:
    """A plugin that registers one extension of every kind."""

    @hookimpl
    def register_verifiers(self, register: VerifierRegistrar) -> None:
        register(ToyLength)

    @hookimpl
    def register_task_sets(self, register: TaskSetRegistrar) -> None:
        register("toy-set", lambda: [Task(id="t1", prompt="Say hi.")])

    @hookimpl
    def register_environments(self, register: EnvironmentRegistrar) -> None:
        def toy_env(config: Any, settings: ToySettings) -> str:
            return f"{settings.greeting} x{config.max_turns}"

        register("toy_env", toy_env, settings=ToySettings)

    @hookimpl
    def register_losses(self, register: LossRegistrar) -> None:
        def compute(lp: Any, inputs: Any, config: Any) -> Any:
            return -config["scale"] * lp * inputs["advantages"]

        register(Loss("toy_pg", "A toy policy loss.", config={"scale": 1.0}, compute=compute))

    @hookimpl
    def register_sandbox_backends(self, register: SandboxBackendRegistrar) -> None:
        register("toy_box", ToySandbox, processes=True)

    @hookimpl
    def register_reward_protocols(self, register: RewardProtocolRegistrar) -> None:
        register(RewardProtocol("toy", "/toy/score", toy_batch, toy_answer))

    @hookimpl
    def register_presets(self, register: PresetRegistrar) -> None:
        register(Preset("Reward short answers", "toy_length", "taskset:toy-set"))

    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command()
        def toy() -> None:
            """A toy command."""


@pytest.fixture
def toy(register_plugin: Callable[..., Any]) -> Any:
    info = register_plugin(ToyPlugin(), name="toy")
    assert info.errors == []
    return info


def test_every_kind_is_listed_under_its_plugin(toy: Any) -> None:
    group = click.Group()
    get_plugins().add_commands(group)
    [listed] = [p for p in get_plugins().listing() if p["name"] == "toy"]
    assert listed["verifiers"] == ["toy_length"]
    assert listed["task_sets"] == ["toy-set"]
    assert listed["environments"] == ["toy_env"]
    assert listed["losses"] == ["toy_pg"]
    assert listed["sandbox_backends"] == ["toy_box"]
    assert listed["reward_protocols"] == ["toy"]
    assert listed["presets"] == ["Reward short answers"]
    assert listed["commands"] == ["toy"]


def test_verifier_and_task_set(toy: Any) -> None:
    [task] = load_task_source("taskset:toy-set").values()
    reward = reward_for("toy_length")
    verdict = reward.verifiers["toy_length"].verify(task, Completion(task_id="t1", completion="hi"))
    assert verdict.reward == 1.0


def test_environment_settings_come_from_the_run_config(toy: Any) -> None:
    config = validate(
        {"tasks": "t.jsonl", "environment": "toy_env", "environment_config": {"greeting": "hi"}},
        (),
    )
    assert environment("toy_env", config) == "hi x1"
    bad = config.model_copy(update={"environment_config": {"greting": "hi"}})
    with pytest.raises(UserError, match="unknown setting 'greting'"):
        environment("toy_env", bad)


def test_loss_reaches_config_and_the_server(toy: Any) -> None:
    from rl_verifier_server.runtime.losses import get_loss

    config = validate({"tasks": "t.jsonl", "loss": "toy_pg", "loss_config": {"scale": 2.0}}, ())
    assert config.loss == "toy_pg"
    import torch

    served = get_loss("toy_pg")
    assert served.required == ("target_tokens", "logprobs", "advantages")
    lp, advantages = torch.tensor([-1.0, -2.0]), torch.tensor([1.0, 0.5])
    terms = served.fn(lp, {"advantages": advantages}, served.resolve_config({"scale": 2.0}))
    assert terms.elementwise.tolist() == [2.0, 2.0]


def test_sandbox_backend_opens_by_name(toy: Any) -> None:
    from rl_verifier_sandbox import backend_names, get_sandbox

    assert "toy_box" in backend_names(processes=True)
    assert isinstance(get_sandbox("toy_box"), ToySandbox)


def test_reward_protocol_is_served(toy: Any) -> None:
    from starlette.testclient import TestClient

    from rl_verifier import Scorer
    from rl_verifier.reward_server.app import build_app
    from rl_verifier.reward_server.settings import ServerOptions

    app = build_app(Scorer("toy_length", executor="inline"), ServerOptions("toy_length"))
    body = {
        "tasks": [{"id": "t1", "prompt": "Say hi."}],
        "completions": [
            {"task_id": "t1", "completion": "hi"},
            {"task_id": "t1", "completion": "x" * 9},
        ],
    }
    with TestClient(app) as client:
        answer = client.post("/toy/score", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"toy": [1.0, 0.0]}


def test_preset_shows_on_the_builder_page(toy: Any) -> None:
    from rl_verifier.web.app import available_presets

    titles = {p["title"]: p["values"] for p in available_presets()}
    assert titles["Reward short answers"]["task"] == "taskset:toy-set"


def test_unknown_names_share_one_message(toy: Any) -> None:
    plugins = get_plugins()
    for registry in plugins.registries().values():
        with pytest.raises(UserError, match=rf"^unknown {registry.kind} 'nope'; known are: "):
            registry.get("nope")


def test_a_plugins_sandbox_backend_is_a_doctor_choice(toy: Any) -> None:
    from click.testing import CliRunner

    group = click.Group()
    get_plugins().add_commands(group)  # as `rlv` adds them
    shown = CliRunner().invoke(group, ["sandbox", "doctor", "--help"])
    assert "toy_box" in shown.output
    refused = CliRunner().invoke(group, ["sandbox", "doctor", "--backend", "nope"])
    assert refused.exit_code == 2 and "toy_box" in refused.output
