"""Core's loss registry is the one list: `rlv serve` runs every loss in it, and the training
guide and the README name every loss `rlv train` offers."""

from __future__ import annotations

import re
from pathlib import Path

from rl_verifier.discovery.losses import get_loss, loss_table, policy_losses
from rl_verifier_server.runtime.losses import losses

ROOT = Path(__file__).resolve().parents[1]
TRAINING_GUIDE = ROOT / "docs" / "training.md"


def test_every_loss_the_trainer_knows_is_implemented_by_the_server() -> None:
    served = losses()
    assert set(loss_table()) == set(served)
    for name, entry in loss_table().items():
        loss, implemented = entry.value, served[name]
        # the datums we build carry every input the server requires, and only ones it reads
        assert set(implemented.required) <= set(loss.inputs), name
        assert set(loss.inputs) <= {*implemented.required, *implemented.optional}, name
        assert dict(loss.config) == dict(implemented.config), name


def test_the_training_guide_names_every_policy_loss_and_its_settings() -> None:
    [row] = [line for line in TRAINING_GUIDE.read_text().splitlines() if "`loss_config`" in line]
    named = set(re.findall(r"`(\w+)`", row))
    for name in policy_losses():
        assert name in named, f"docs/training.md does not name the loss '{name}'"
        missing = set(get_loss(name).config) - named
        assert not missing, f"docs/training.md: loss '{name}' takes {', '.join(sorted(missing))}"


def test_the_readme_lists_every_policy_loss() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    [line] = [line for line in lines if "policy `loss`" in line]
    named = set(re.findall(r"`(\w+)`", line))
    missing = [name for name in policy_losses() if name not in named]
    assert not missing, f"README.md's loss list lacks {missing}"
