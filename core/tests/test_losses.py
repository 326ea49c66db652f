"""One loss registry: adding a loss is one registration that config, packing and `rlv new` see."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rl_verifier import Loss, LossRegistrar, hookimpl
from rl_verifier.base.errors import UserError
from rl_verifier.discovery.losses import policy_losses
from rl_verifier.discovery.plugins import PluginInfo
from rl_verifier.train.config import validate
from rl_verifier.train.packing import Segment, pack, to_datum
from rl_verifier.train.script_writer import BuildRequest, render_loop


class DummyLoss:
    @hookimpl
    def register_losses(self, register: LossRegistrar) -> None:
        inputs = ("target_tokens", "advantages")
        register(Loss("dummy_pg", "A test loss.", inputs=inputs, config={"k": 1.0}))


def test_a_registered_loss_is_usable_everywhere(register_plugin: Callable[..., Any]) -> None:
    register_plugin(DummyLoss(), name="dummy-loss")
    assert "dummy_pg" in policy_losses()
    config = validate({"tasks": "t.jsonl", "loss": "dummy_pg", "loss_config": {"k": 2.0}}, ())
    assert config.loss == "dummy_pg"
    with pytest.raises(UserError, match="loss_config key 'beta' is not used by loss 'dummy_pg'"):
        validate({"tasks": "t.jsonl", "loss": "dummy_pg", "loss_config": {"beta": 1.0}}, ())
    packed = pack([Segment([1, 2], sampled=False), Segment([3], True, [-0.5])], advantage=1.0)
    datum = to_datum(packed, "dummy_pg")
    assert set(datum.loss_fn_inputs) == {"target_tokens", "advantages"}
    script, _, _ = render_loop(
        BuildRequest(verifier="format", model="rlv/tiny-chat", loss="dummy_pg")
    )
    assert script


def test_unknown_losses_are_refused_with_the_choices() -> None:
    with pytest.raises(UserError, match="unknown loss 'mse'; known are: importance_sampling"):
        validate({"tasks": "t.jsonl", "loss": "mse"}, ())
    with pytest.raises(UserError, match="unknown loss 'cross_entropy'"):  # not a policy loss
        validate({"tasks": "t.jsonl", "loss": "cross_entropy"}, ())


def test_a_name_is_registered_once(register_plugin: Callable[..., Any]) -> None:
    class Again:
        @hookimpl
        def register_losses(self, register: LossRegistrar) -> None:
            register(Loss("ppo", "again"))

    info: PluginInfo = register_plugin(Again(), name="again")
    assert any("loss name 'ppo' is claimed" in error for error in info.errors)
    assert "ppo" not in info.registered.get("losses", [])
