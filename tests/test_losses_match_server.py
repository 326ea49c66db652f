"""Core's loss registry and `rlv serve`'s implementations name the same losses and keys."""

from __future__ import annotations

from rl_verifier.losses import LOSSES
from rl_verifier_server.runtime.losses import LOSSES as SERVER_LOSSES


def test_every_loss_the_trainer_knows_is_implemented_by_the_server() -> None:
    assert set(LOSSES) == set(SERVER_LOSSES)
    for name, loss in LOSSES.items():
        implemented = SERVER_LOSSES[name]
        # the datums we build carry every input the server requires, and only ones it reads
        assert set(implemented.required) <= set(loss.inputs), name
        assert set(loss.inputs) <= {*implemented.required, *implemented.optional}, name
        assert dict(loss.config) == dict(implemented.config), name
