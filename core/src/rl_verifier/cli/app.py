"""The ``rlv`` group: each core command lives in its own module and is imported when it is
run; plugin commands are added only when a name is not a core command's, or for the list."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from rl_verifier.base.errors import UserError
from rl_verifier.base.version import __version__
from rl_verifier.cli.options import quiet, say

__all__ = ["COMMANDS", "cli", "main", "quiet", "say"]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

COMMANDS = {
    "builder": "rl_verifier.cli.builder:builder",
    "cache": "rl_verifier.cli.cache:cache",
    "eval": "rl_verifier.cli.eval:eval_command",
    "new": "rl_verifier.cli.new:new_loop",
    "plugin": "rl_verifier.cli.plugin:plugin",
    "plugins": "rl_verifier.cli.listing:plugins",
    "report": "rl_verifier.cli.report:report",
    "reward-server": "rl_verifier.cli.reward_server:reward_server",
    "train": "rl_verifier.cli.train:train",
    "verifiers": "rl_verifier.cli.listing:verifiers",
    "verify": "rl_verifier.cli.verify:verify",
}
"""Each core command's name and where it lives (``module:attribute``)."""


class CommandGroup(click.Group):
    """A group whose core commands import on first use and whose plugin commands load with
    the plugins, so that ``rlv --version`` or ``rlv verify`` discovers nothing it does not
    need."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_commands_added = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        if cmd_name not in self.commands:
            self.add_plugin_commands()
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.add_plugin_commands()
        return sorted({*COMMANDS, *self.commands})

    def add_plugin_commands(self) -> None:
        """Let each plugin add its commands (once)."""
        if not self.plugin_commands_added:
            self.plugin_commands_added = True
            from rl_verifier.discovery.plugins import get_plugins

            get_plugins().add_commands(self)


@click.group(cls=CommandGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="rlv")
@click.option("-v", "--verbose", count=True, help="Log more (-v: info, -vv: debug) to stderr.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors: no progress or summary.")
def cli(verbose: int, quiet: bool) -> None:
    """rl-verifier: turn verifiers into RL rewards.

    Every command takes -h for its options and an example. Shell completion:
    eval "$(_RLV_COMPLETE=bash_source rlv)" (zsh_source, fish_source for other shells).
    """
    level = (
        logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    logging.basicConfig(level=level, format="rlv: %(levelname)s: %(name)s: %(message)s")


def main() -> None:
    """Entry point: user errors print one line."""
    try:
        cli.main(prog_name="rlv", standalone_mode=False)
    except UserError as exc:
        click.echo(f"rlv: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("rlv: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
