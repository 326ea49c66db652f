"""One loss registry: adding a loss is one registration that config, packing and `rlv new` see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rl_verifier.errors import UserError
from rl_verifier.losses import LOSSES, Loss, policy_losses, register_loss
from rl_verifier.train.config import validate
from rl_verifier.train.new_loop import BuildRequest, render_loop
from rl_verifier.train.packing import Segment, pack, to_datum


@pytest.fixture
def dummy_loss() -> Iterator[Loss]:
    loss = register_loss(
        Loss("dummy_pg", "A test loss.", inputs=("target_tokens", "advantages"), config={"k": 1.0})
    )
    yield loss
    del LOSSES["dummy_pg"]


def test_a_registered_loss_is_usable_everywhere(dummy_loss: Loss) -> None:
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
    with pytest.raises(UserError, match="unknown loss 'mse'; choose one of: importance_sampling"):
        validate({"tasks": "t.jsonl", "loss": "mse"}, ())
    with pytest.raises(UserError, match="unknown loss 'cross_entropy'"):  # not a policy loss
        validate({"tasks": "t.jsonl", "loss": "cross_entropy"}, ())


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_loss(Loss("ppo", "again"))
