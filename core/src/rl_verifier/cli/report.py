"""``rlv report``: a run directory's report.png and report.html."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(epilog="Example: rlv report runs/demo-20261129-173651")
@click.argument("run_dir", type=click.Path(path_type=Path))
def report(run_dir: Path) -> None:
    """Write RUN_DIR/report.png and report.html: reward, components, statuses, time."""
    from rl_verifier.train.report import write_report

    png, html = write_report(run_dir)
    click.echo(f"wrote {png}")
    click.echo(f"wrote {html}")
