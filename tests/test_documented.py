"""Every command, option, environment variable and training setting is documented.

In the style of datasette's documentation tests: adding one without a line in docs/
fails here, naming what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from rl_verifier.cli.app import cli
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCES = [ROOT / "core", ROOT / "server", ROOT / "sandbox", *sorted((ROOT / "plugins").iterdir())]


def commands() -> Iterator[tuple[str, click.Command]]:
    get_plugins().add_commands(cli)

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, f"{path} {name}")

    yield from walk(cli, "rlv")


COMMANDS = [
    (path, command)
    for path, command in commands()
    if not isinstance(command, click.Group) or path == "rlv"
]


def section(path: str) -> str:
    """The text under the heading "## `rlv ...`" of docs/cli.md."""
    text = (DOCS / "cli.md").read_text()
    match = re.search(rf"^## `{re.escape(path)}`\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/cli.md has no section '## `{path}`'"
    return match.group(1)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_and_option_is_documented(path: str, command: click.Command) -> None:
    text = section(path)
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        long = max(param.opts, key=len)
        assert re.search(rf"`{re.escape(long)}[ `=]", text), f"{path}: {long} is not in docs/cli.md"
        assert param.help, f"{path}: {long} has no --help text"
    assert command.help, f"{path} has no help text"


def test_every_environment_variable_is_documented() -> None:
    documented = set(re.findall(r"`(RLV_[A-Z0-9_]+)`", (DOCS / "environment.md").read_text()))
    read: set[str] = set()
    for source in SOURCES:
        for path in source.rglob("*.py"):
            read |= set(re.findall(r"\bRLV_[A-Z0-9_]+\b", path.read_text()))
    missing = sorted(read - documented)
    assert not missing, f"not in docs/environment.md: {missing}"


def test_every_training_setting_is_documented() -> None:
    text = (DOCS / "training.md").read_text()
    missing = [name for name in TrainConfig.model_fields if f"`{name}`" not in text]
    assert not missing, f"TrainConfig fields not in docs/training.md: {missing}"


def test_every_verifier_setting_has_a_description() -> None:
    for name, entry in get_plugins().registry.items():
        for key, info in entry.cls.Config.model_fields.items():
            assert info.description, f"verifier '{name}' setting '{key}' has no description"
