"""``rlv train``: a training run from a TOML config, or the rest of a killed one."""

from __future__ import annotations

from pathlib import Path

import click

from rl_verifier.base.errors import UserError
from rl_verifier.train.config import TrainingBackend

TRAIN_EXAMPLE = """\b
Examples:
  rlv train examples/demo/demo.toml                 # local rlv serve, built-in model
  rlv train my.toml --set steps=100 --set verifier_config.rule=log
  rlv train my.toml --backend tinker                # hosted Tinker (TINKER_API_KEY)
  rlv train --resume runs/demo-20261129-173651      # continue a killed run
"""


@click.command(epilog=TRAIN_EXAMPLE)
@click.argument("config_path", metavar="CONFIG", required=False, type=click.Path(path_type=Path))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one setting of CONFIG (repeatable; nested keys as a.b=...). "
    "Settings are listed in docs/training.md.",
)
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    metavar="RUN_DIR",
    help="Continue this run directory from its last checkpoint (CONFIG defaults to its "
    "config.json).",
)
@click.option(
    "--backend",
    type=click.Choice([b.value for b in TrainingBackend]),
    help="Override the config's backend: local (start rlv serve here) or tinker (hosted).",
)
def train(
    config_path: Path | None, overrides: tuple[str, ...], resume: Path | None, backend: str | None
) -> None:
    """Train a LoRA policy with RL on verifier rewards (Tinker, or a local rlv serve).

    CONFIG is a TOML file of training settings; the run directory gets metrics.jsonl,
    samples.jsonl, checkpoints.jsonl and report.png/report.html.
    """
    from rl_verifier.train import load_config, run

    extra = (*overrides, f"backend={backend}") if backend else overrides
    if resume is not None and config_path is None:
        from rl_verifier.train.rundir import RunDir

        config_path = RunDir(resume).config_file
    if config_path is None:
        raise UserError("give a CONFIG file, or --resume RUN_DIR")
    config = load_config(config_path, extra)
    run_dir = run(config, resume)
    from rl_verifier.train.gains import gain_lines
    from rl_verifier.train.report import load_run, write_report

    logged = load_run(run_dir)
    for line in gain_lines(logged.eval_samples, logged.evals, logged.config):
        click.echo(line)
    png, html = write_report(logged)
    click.echo(f"run directory: {run_dir}")
    click.echo(f"report: {png} and {html}")
