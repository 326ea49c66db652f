"""What the commands share: the scoring options (one definition each) and ``-q``-aware
progress notes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, get_args

import click

from rl_verifier.parsing.config_input import merge_configs, read_config_file
from rl_verifier.scoring.engine import ExecutorKind

F = TypeVar("F", bound=Callable[..., Any])


def settings_options(function: F) -> F:
    """``--config KEY=VALUE`` (repeatable) and ``--config-file PATH``."""
    function = click.option(
        "--config-file",
        type=click.Path(path_type=Path),
        help="TOML or JSON file of verifier settings; --config overrides it key by key.",
    )(function)
    return click.option(
        "--config",
        "pairs",
        multiple=True,
        metavar="KEY=VALUE",
        help="A verifier setting; repeatable. For a reward spec or per-task verifiers: "
        "NAME.KEY=VALUE. Values are JSON when they parse.",
    )(function)


def executor_option(function: F) -> F:
    """``--executor process|inline|ray``."""
    return click.option(
        "--executor",
        type=click.Choice(get_args(ExecutorKind)),
        default="process",
        show_default=True,
        help="process: killable worker processes; inline: this process (no hard "
        "timeouts); ray: Ray actors.",
    )(function)


def read_settings(pairs: tuple[str, ...], config_file: Path | None) -> dict[str, Any]:
    """The verifier settings the two options give."""
    return merge_configs(read_config_file(config_file) if config_file else {}, pairs)


def quiet() -> bool:
    """Whether ``rlv -q`` was given."""
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("quiet"))


def say(message: str) -> None:
    """A progress note on stderr, unless ``-q``."""
    if not quiet():
        click.echo(message, err=True)
