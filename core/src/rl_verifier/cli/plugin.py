"""``rlv plugin new``: the group of commands that work on plugins."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def plugin() -> None:
    """Work on plugins."""


@plugin.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to create the package [default: ./rl-verifier-NAME].",
)
def plugin_new(name: str, directory: Path | None) -> None:
    """Create plugin package NAME: a verifier skeleton, sample data and contract tests.

    \b
    NAME as you would say it, e.g. json-schema gives
      distribution    rl-verifier-json-schema
      import package  rl_verifier_json_schema
      verifier        json_schema
    """
    from rl_verifier.cli.plugin_new import create_plugin

    target = create_plugin(name, directory)
    click.echo(f"created {target} (its README.md says what is in it)")
    click.echo(f"next: cd {target} && pip install -e '.[test]' && pytest")
