"""rl-verifier plugin: adds ``rlv sandbox doctor``."""

from __future__ import annotations

import json

import click

from rl_verifier import hookimpl


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(sandbox)


@click.group()
def sandbox() -> None:
    """Isolated execution of untrusted code."""


@sandbox.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--backend",
    type=click.Choice(["bwrap", "docker", "process"]),
    default="bwrap",
    show_default=True,
    help="Backend whose limits to probe.",
)
def doctor(as_json: bool, backend: str) -> None:
    """Show which backends work here and which limits are enforced (by running probes).

    Exits 1 when the chosen backend does not work or fails a check.
    """
    from rl_verifier_sandbox.doctor import format_report, run_doctor

    report = run_doctor(backend)
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if not report["checks"] or not all(check["ok"] for check in report["checks"]):
        raise SystemExit(1)
