"""Core's loss registry is the one list: `rlv serve` implements the same losses with the
same keys, and the training guide names every loss `rlv train` offers."""

from __future__ import annotations

import re
from pathlib import Path

from rl_verifier.losses import LOSSES, policy_losses
from rl_verifier_server.runtime.losses import LOSSES as SERVER_LOSSES

TRAINING_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "training.md"


def test_every_loss_the_trainer_knows_is_implemented_by_the_server() -> None:
    assert set(LOSSES) == set(SERVER_LOSSES)
    for name, loss in LOSSES.items():
        implemented = SERVER_LOSSES[name]
        # the datums we build carry every input the server requires, and only ones it reads
        assert set(implemented.required) <= set(loss.inputs), name
        assert set(loss.inputs) <= {*implemented.required, *implemented.optional}, name
        assert dict(loss.config) == dict(implemented.config), name


def test_the_training_guide_names_every_policy_loss_and_its_settings() -> None:
    [row] = [line for line in TRAINING_GUIDE.read_text().splitlines() if "`loss_config`" in line]
    named = set(re.findall(r"`(\w+)`", row))
    for name in policy_losses():
        assert name in named, f"docs/training.md does not name the loss '{name}'"
        missing = set(LOSSES[name].config) - named
        assert not missing, f"docs/training.md: loss '{name}' takes {', '.join(sorted(missing))}"
