"""The ``rlv`` command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from rl_verifier import __version__
from rl_verifier.config_input import merge_configs, read_config_file
from rl_verifier.contracts import Score, Task
from rl_verifier.engine import Sample
from rl_verifier.errors import UserError
from rl_verifier.jsonl import atomic_output, load_samples, load_tasks
from rl_verifier.plugins import get_plugins
from rl_verifier.reward import Reward, build_reward
from rl_verifier.scoring import make_executor, score_batch
from rl_verifier.summary import format_summary, summarise


@click.group()
@click.version_option(__version__, prog_name="rlv")
def cli() -> None:
    """rl-verifier: turn verifiers into RL rewards."""


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List plugins, the verifiers they register, and load errors."""
    listing = get_plugins().listing()
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    for plugin in listing:
        dist = f"{plugin['distribution']} {plugin['version']}" if plugin["distribution"] else ""
        verifiers = ", ".join(plugin["verifiers"]) or "-"
        click.echo(f"{plugin['name']:<16} {plugin['state']:<9} {dist:<32} verifiers: {verifiers}")
        for error in plugin["errors"]:
            click.echo(f"    error: {error}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verifiers(as_json: bool) -> None:
    """List verifiers with their config schema and defaults."""
    entries = []
    for _name, entry in get_plugins().registry.items():
        meta = entry.cls.metadata().model_dump(mode="json")
        with contextlib.suppress(UserError):  # settings with required keys: class range
            meta["reward_range"] = list(entry.cls().bounds())
        schema = entry.cls.Config.model_json_schema()
        entries.append({**meta, "plugin": entry.plugin, "version": entry.version, "config": schema})
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    for item in entries:
        click.echo(f"{item['name']}  ({item['plugin']} {item['version']})")
        click.echo(f"    {item['description']}")
        low, high = item["reward_range"]
        click.echo(f"    reward [{low}, {high}], timeout {item['default_timeout_s']}s")
        for key, prop in item["config"].get("properties", {}).items():
            default = json.dumps(prop.get("default"))
            click.echo(f"    --config {key}=...  default {default}  {prop.get('description', '')}")


@cli.command()
@click.option("--verifier", "spec", help="Verifier name or reward spec, e.g. '0.8*a + 0.2*b'.")
@click.option("--config", "pairs", multiple=True, metavar="KEY=VALUE", help="Verifier setting.")
@click.option("--config-file", type=click.Path(path_type=Path), help="TOML or JSON settings.")
@click.option("--tasks", "tasks_path", required=True, type=click.Path(path_type=Path))
@click.option("--completions", "completions_path", required=True, type=click.Path(path_type=Path))
@click.option("--out", "out_path", required=True, type=click.Path(path_type=Path))
@click.option(
    "--executor",
    type=click.Choice(["process", "inline", "ray"]),
    default="process",
    show_default=True,
    help="process: killable workers; inline: this process; ray: Ray actors.",
)
@click.option("--workers", type=click.IntRange(min=1), help="Worker processes [default: cores].")
@click.option("--ray-address", help="Ray cluster to join (--executor ray) [default: start one].")
@click.option("--summary-json", type=click.Path(path_type=Path), help="Also write the summary.")
def verify(
    spec: str | None,
    pairs: tuple[str, ...],
    config_file: Path | None,
    tasks_path: Path,
    completions_path: Path,
    out_path: Path,
    executor: str,
    workers: int | None,
    ray_address: str | None,
    summary_json: Path | None,
) -> None:
    """Score every completion and write one score row per completion."""
    config = merge_configs(read_config_file(config_file) if config_file else {}, pairs)
    tasks = load_tasks(tasks_path)
    samples = load_samples(tasks, completions_path)
    jobs = bind_rewards(spec, config, samples, tasks_path)
    with (
        atomic_output(out_path) as out,
        click.progressbar(
            length=len(jobs), label="scoring", file=sys.stderr, hidden=not sys.stderr.isatty()
        ) as bar,
    ):

        def write(score: Score) -> None:
            out.write(score.model_dump_json() + "\n")
            out.flush()
            bar.update(1)

        chosen = make_executor(executor, workers, ray_address)  # type: ignore[arg-type]
        result = asyncio.run(score_batch(jobs, chosen, write))
    summary = summarise(result.scores, result.metrics)
    summary["verifier"] = sorted({reward.ref.name for reward, _ in jobs})
    click.echo(format_summary(summary, out_path))
    if summary_json:
        with atomic_output(summary_json) as handle:
            json.dump(summary, handle, indent=2)


def bind_rewards(
    spec: str | None, config: dict[str, Any], samples: list[Sample], tasks_path: Path
) -> list[tuple[Reward, Sample]]:
    """Pair each sample with its reward: ``--verifier`` for all, else the task's own."""
    registry = get_plugins().registry
    if spec:
        reward = build_reward(spec, registry, config)
        return [(reward, sample) for sample in samples]
    rewards: dict[str, Reward] = {}
    jobs = []
    for sample in samples:
        name = task_verifier(sample.task, tasks_path)
        if name not in rewards:
            rewards[name] = build_reward(name, registry, config.get(name, {}))
        jobs.append((rewards[name], sample))
    unused = sorted(set(config) - set(rewards))
    if unused:
        raise UserError(
            f"config for '{unused[0]}' given, but the tasks use only: {', '.join(sorted(rewards))}"
            " (without --verifier, write --config VERIFIER.KEY=VALUE)"
        )
    return jobs


def task_verifier(task: Task, tasks_path: Path) -> str:
    if not task.verifier:
        raise UserError(f"{tasks_path}: task '{task.id}' names no verifier; pass --verifier")
    return task.verifier


@cli.group()
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

    NAME as you would say it, e.g. json-schema: the distribution is rl-verifier-json-schema,
    the import package rl_verifier_json_schema, the verifier json_schema.
    """
    from rl_verifier.scaffold import create_plugin

    target = create_plugin(name, directory)
    click.echo(f"created {target} (its README.md says what is in it)")
    click.echo(f"next: cd {target} && pip install -e '.[test]' && pytest")


@cli.command()
@click.argument("config_path", metavar="CONFIG", required=False, type=click.Path(path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a setting.")
@click.option("--resume", type=click.Path(path_type=Path), help="Continue this run directory.")
@click.option("--backend", type=click.Choice(["local", "tinker"]), help="Override the backend.")
def train(
    config_path: Path | None, overrides: tuple[str, ...], resume: Path | None, backend: str | None
) -> None:
    """Train a LoRA policy on verifier rewards (Tinker, or a local rlv serve)."""
    from rl_verifier.train import load_config, run

    extra = (*overrides, f"backend={backend}") if backend else overrides
    if resume is not None and config_path is None:
        config_path = resume / "config.json"
    if config_path is None:
        raise UserError("give a CONFIG file, or --resume RUN_DIR")
    config = load_config(config_path, extra)
    run_dir = run(config, resume)
    from rl_verifier.train.report import write_report

    png, html = write_report(run_dir)
    click.echo(f"run directory: {run_dir}")
    click.echo(f"report: {png} and {html}")


@cli.command("new")
@click.option("--verifier", required=True, help="Verifier name or reward spec.")
@click.option("--task", default=None, help="Tasks JSONL or taskset:NAME [default: NAME-example].")
@click.option("--model", required=True, help="Base model, e.g. Qwen/Qwen3-8B or rlv/tiny-chat.")
@click.option("--loss", default="importance_sampling", show_default=True)
@click.option("--rank", default=32, show_default=True, type=int)
@click.option("--steps", default=50, show_default=True, type=int)
@click.option("--group-size", default=8, show_default=True, type=int)
@click.option("--groups-per-step", default=4, show_default=True, type=int)
@click.option("--learning-rate", type=float, default=None, help="[default: from the catalogue]")
@click.option(
    "--backend", type=click.Choice(["tinker", "local"]), default="tinker", show_default=True
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Script path [default: train_VERIFIER.py]; the config goes beside it.",
)
@click.option(
    "--environment",
    default="single_turn",
    show_default=True,
    help="A registered environment, e.g. a multi-turn tool environment.",
)
@click.option("--max-turns", default=1, show_default=True, type=int)
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
    force: bool,
) -> None:
    """Write a ready-to-run training loop (a Python file and its TOML config)."""
    from rl_verifier.train.builder import BuildRequest, write_loop

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
        )
    )
    for warning in built.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"wrote {built.script} and {built.config}")
    local = 'backend = "local"' in built.config_text
    hint = "" if local else " (needs TINKER_API_KEY; or add --backend local)"
    click.echo(f"run it: python {built.script}{hint}")


@cli.command()
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
def builder(port: int) -> None:
    """Serve a local page (127.0.0.1 only) that previews and downloads `rlv new` output."""
    try:
        from rl_verifier.web import serve
    except ImportError as exc:
        raise UserError(
            f"rlv builder needs the web extra: pip install 'rl-verifier[web]' ({exc})"
        ) from None
    click.echo(f"rlv builder: http://127.0.0.1:{port}/")
    serve(port)


@cli.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
def report(run_dir: Path) -> None:
    """Write RUN_DIR/report.png and report.html: reward, components, statuses, time."""
    from rl_verifier.train.report import write_report

    png, html = write_report(run_dir)
    click.echo(f"wrote {png}")
    click.echo(f"wrote {html}")


def main() -> None:
    """Entry point: plugin commands are added, user errors print one line."""
    plugins_ = get_plugins()
    plugins_.call_each("register_commands", cli=cli)
    try:
        cli.main(standalone_mode=False)
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
