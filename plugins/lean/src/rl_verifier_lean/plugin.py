"""Entry point: the ``lean`` verifier, ``rlv lean doctor`` and the ``lean-example`` tasks."""

from __future__ import annotations

import json

import click

from rl_verifier import Preset, PresetRegistrar, TaskSetRegistrar, VerifierRegistrar, hookimpl
from rl_verifier_lean.config import SANDBOX_CHOICE
from rl_verifier_lean.tasks import example_tasks
from rl_verifier_lean.verifier import LeanVerifier


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(LeanVerifier)


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("lean-example", example_tasks)


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(lean)


@click.group()
def lean() -> None:
    """Lean 4 proof checking."""


@lean.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--project", help="Lake project with Mathlib and the REPL (or RLV_LEAN_PROJECT).")
@click.option(
    "--sandbox",
    type=click.Choice(SANDBOX_CHOICE.choices()),
    default="auto",
    show_default=True,
    help="How Lean runs: auto (bwrap when it works), bwrap, or none (plain processes).",
)
def doctor(as_json: bool, project: str | None, sandbox: str) -> None:
    """Find lean, lake, the REPL and Mathlib, try the sandbox and a one-line proof; say what
    to install when something is missing. Exits 1 when Lean proofs cannot be checked."""
    from rl_verifier_lean.config import LeanConfig
    from rl_verifier_lean.doctor import format_report, run_doctor

    report = run_doctor(LeanConfig(project=project, sandbox=sandbox))
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if not report["ok"]:
        raise SystemExit(1)


@hookimpl
def register_presets(register: PresetRegistrar) -> None:
    register(Preset("Reward proofs that verify", "lean", "taskset:lean-example"))
