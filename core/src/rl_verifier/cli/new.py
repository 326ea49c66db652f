"""``rlv new``: write a ready-to-run training loop for a verifier."""

from __future__ import annotations

from pathlib import Path

import click

from rl_verifier.discovery.losses import policy_losses
from rl_verifier.train.script_writer import BACKENDS, request_defaults

NEW_DEFAULTS = request_defaults()
NEW_EXAMPLE = """\b
Examples:
  rlv new --verifier calibration --model Qwen/Qwen3-8B --rank 32 --steps 50 -o train_cal.py
  rlv new --verifier tool_calls --task taskset:fictopedia --model rlv/tiny-chat \\
      --backend local --environment search_tools --max-turns 4
  rlv new --verifier calibration --model Qwen/Qwen3-8B --standalone   # the loop, in one file
"""


@click.command("new", epilog=NEW_EXAMPLE)
@click.option("--verifier", required=True, metavar="SPEC", help="Verifier name or reward spec.")
@click.option(
    "--task",
    default=None,
    metavar="PATH|taskset:NAME",
    help="Tasks JSONL or a plugin's task set [default: taskset:VERIFIER-example].",
)
@click.option(
    "--model", required=True, help="Base model, e.g. Qwen/Qwen3-8B or rlv/tiny-chat (local)."
)
@click.option(
    "--loss",
    type=click.Choice(policy_losses()),
    default=NEW_DEFAULTS["loss"],
    show_default=True,
    help="Policy-gradient loss the trainer optimises.",
)
@click.option(
    "--rank", default=NEW_DEFAULTS["rank"], show_default=True, type=int, help="LoRA rank."
)
@click.option(
    "--steps", default=NEW_DEFAULTS["steps"], show_default=True, type=int, help="RL steps."
)
@click.option(
    "--group-size",
    default=NEW_DEFAULTS["group_size"],
    show_default=True,
    type=int,
    help="Samples per task (a group).",
)
@click.option(
    "--groups-per-step",
    default=NEW_DEFAULTS["groups_per_step"],
    show_default=True,
    type=int,
    help="Tasks per step.",
)
@click.option(
    "--learning-rate",
    type=float,
    default=None,
    help="Adam learning rate [default: from the model catalogue].",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=NEW_DEFAULTS["backend"],
    show_default=True,
    help="tinker: the hosted API (TINKER_API_KEY); local: rlv serve on this machine.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Script path [default: train_VERIFIER.py]; the TOML config goes beside it.",
)
@click.option(
    "--environment",
    default=NEW_DEFAULTS["environment"],
    show_default=True,
    help="A registered environment (rlv plugins lists them), e.g. search_tools.",
)
@click.option(
    "--max-turns",
    default=NEW_DEFAULTS["max_turns"],
    show_default=True,
    type=int,
    help="Model turns per episode (above 1 for multi-turn tool use).",
)
@click.option(
    "--standalone",
    is_flag=True,
    default=NEW_DEFAULTS["standalone"],
    help="One file with the whole loop and every Tinker call, no TOML (single-turn only).",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def new_loop(
    verifier: str,
    task: str | None,
    model: str,
    loss: str,
    rank: int,
    steps: int,
    group_size: int,
    groups_per_step: int,
    learning_rate: float | None,
    backend: str,
    output: Path | None,
    environment: str,
    max_turns: int,
    standalone: bool,
    force: bool,
) -> None:
    """Write a ready-to-run training loop (a Python file and its TOML config, or with
    --standalone one file holding the whole loop)."""
    from rl_verifier.train.script_writer import BuildRequest, write_loop

    built = write_loop(
        BuildRequest(
            verifier=verifier,
            model=model,
            task=task,
            loss=loss,
            rank=rank,
            steps=steps,
            backend=backend,
            group_size=group_size,
            groups_per_step=groups_per_step,
            learning_rate=learning_rate,
            output=output,
            force=force,
            environment=environment,
            max_turns=max_turns,
            standalone=standalone,
        )
    )
    for warning in built.warnings:
        click.echo(f"warning: {warning}", err=True)
    if built.config is None:
        click.echo(f"wrote {built.script}")
        click.echo(
            f"run it: python {built.script} (needs TINKER_API_KEY, or TINKER_BASE_URL and "
            "TINKER_API_KEY of an rlv serve: see its docstring)"
        )
        return
    click.echo(f"wrote {built.script} and {built.config}")
    local = 'backend = "local"' in built.config_text
    hint = "" if local else " (needs TINKER_API_KEY; or add --backend local)"
    click.echo(f"run it: python {built.script}{hint}")
