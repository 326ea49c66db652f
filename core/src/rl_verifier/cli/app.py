"""The ``rlv`` command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from rl_verifier.base.contracts import TASKSET_PREFIX, Score
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.base.version import __version__
from rl_verifier.cli.cache import cache
from rl_verifier.cli.eval import eval_command
from rl_verifier.cli.options import executor_option, read_settings, settings_options
from rl_verifier.cli.reward_server import reward_server
from rl_verifier.discovery.losses import policy_losses
from rl_verifier.discovery.plugins import KINDS, get_plugins
from rl_verifier.files.batch_files import check_output
from rl_verifier.files.batch_files import resume as resume_partial
from rl_verifier.files.jsonl import (
    atomic_output,
    is_stdio,
    load_samples_with_columns,
    partial_path,
)
from rl_verifier.scoring.engine import Sample, make_executor, score_batch
from rl_verifier.scoring.resolve import RewardResolver, load_task_source
from rl_verifier.scoring.summary import format_summary, summarise_scores
from rl_verifier.train.config import TrainingBackend
from rl_verifier.train.script_writer import BACKENDS, request_defaults

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
log = logging.getLogger("rl_verifier.cli.app")


@click.group(context_settings=CONTEXT)
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


def quiet() -> bool:
    """Whether ``rlv -q`` was given."""
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("quiet"))


def say(message: str) -> None:
    """A progress note on stderr, unless ``-q``."""
    if not quiet():
        click.echo(message, err=True)


@cli.command(epilog="Example: rlv plugins --json | jq '.[].task_sets'")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List plugins with what each registers (verifiers, task sets, environments, losses,
    sandbox backends, reward protocols, presets, commands) and why any failed to load."""
    listing = get_plugins().listing()
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    for plugin in listing:
        dist = f"{plugin['distribution']} {plugin['version']}" if plugin["distribution"] else ""
        click.echo(f"{plugin['name']:<16} {plugin['state']:<9} {dist}")
        for kind in KINDS:  # one line per kind of extension it registered
            if plugin[kind]:
                click.echo(f"    {kind.replace('_', ' ') + ':':<18} {', '.join(plugin[kind])}")
        for error in plugin["errors"]:
            click.echo(f"    error: {error}")


@cli.command(epilog="Example: rlv verifiers --json | jq '.[] | {name, config}'")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with each config schema).")
def verifiers(as_json: bool) -> None:
    """List verifiers with each setting's type, default and description."""
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
        registration = get_plugins().registry.get(item["name"])
        for key, kind, default, description in setting_rows(registration.cls.Config):
            click.echo(f"    --config {key}=<{kind}>  {default}")
            if description:
                click.echo(f"        {description}")


def setting_rows(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key, type, default, description) for each setting; nested tables as a.b keys."""
    schema = model.model_json_schema()
    for key, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from setting_rows(info.annotation, f"{prefix}{key}.")
            continue
        if info.is_required():
            default = "required"
        else:
            value = info.get_default(call_default_factory=True)
            default = f"default {json.dumps(value, default=str)}"
        kind = schema_type(schema["properties"][key], schema)
        yield f"{prefix}{key}", kind, default, info.description or ""


def schema_type(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    """A short type name for one JSON-schema property: int, str|null, list[str], a|b ..."""
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return str(prop["const"])
    if "$ref" in prop:
        target = schema.get("$defs", {}).get(prop["$ref"].rsplit("/", 1)[-1], {})
        return schema_type(target, schema) if target else "object"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in prop:
            return "|".join(dict.fromkeys(schema_type(p, schema) for p in prop[key]))
    kind = prop.get("type")
    names = {"integer": "int", "number": "float", "string": "str", "boolean": "bool"}
    if kind == "array":
        items = prop.get("items")
        return f"list[{schema_type(items, schema)}]" if items else "list"
    if kind == "object":
        values = prop.get("additionalProperties")
        return f"dict[str, {schema_type(values, schema)}]" if isinstance(values, dict) else "dict"
    if kind == "null":
        return "null"
    return names.get(str(kind), str(kind or "any"))


VERIFY_EXAMPLE = """\b
Examples:
  rlv verify --verifier calibration --config rule=log \\
      --tasks tasks.jsonl --completions completions.jsonl --out scores.jsonl
  rlv verify --verifier '0.8*exact_match + 0.2*format' --tasks taskset:calibration-example \\
      --completions c.jsonl --out -          # score rows to stdout
  rlv verify ... --out scores.jsonl --resume  # continue after Ctrl-C
"""


@cli.command(epilog=VERIFY_EXAMPLE)
@click.option(
    "--verifier",
    "spec",
    metavar="SPEC",
    help="Verifier name or reward spec for every task, e.g. '0.8*exact_match + 0.2*format' "
    "[default: each task's own 'verifier' field].",
)
@settings_options
@click.option(
    "--tasks",
    "tasks_source",
    required=True,
    metavar="PATH|-|taskset:NAME",
    help="Tasks JSONL ({id, prompt, verifier, reference}), '-' for stdin, or a plugin's "
    "task set (rlv plugins lists them).",
)
@click.option(
    "--completions",
    "completions_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Completions JSONL ({task_id, completion}), or '-' for stdin.",
)
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(path_type=Path),
    help="Scores JSONL to write (via OUT.partial, renamed when complete), or '-' for stdout.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted run: keep the rows in OUT.partial scored by the same "
    "verifier version and settings, and score only the rest.",
)
@click.option(
    "--keep-columns",
    is_flag=True,
    help="Copy the completion rows' unknown columns into each score's info.columns "
    "[default: unknown columns are ignored].",
)
@executor_option
@click.option("--workers", type=click.IntRange(min=1), help="Workers [default: one per core].")
@click.option("--ray-address", help="Ray cluster to join (--executor ray) [default: start one].")
@click.option(
    "--summary-json",
    type=click.Path(path_type=Path),
    help="Also write the summary (counts, statuses, mean reward, batch metrics) as JSON.",
)
def verify(
    spec: str | None,
    pairs: tuple[str, ...],
    config_file: Path | None,
    tasks_source: str,
    completions_path: Path,
    out_path: Path,
    resume: bool,
    keep_columns: bool,
    executor: str,
    workers: int | None,
    ray_address: str | None,
    summary_json: Path | None,
) -> None:
    """Score every completion and write one score row per completion.

    Rows are written as they finish; Ctrl-C keeps the finished ones in OUT.partial
    for --resume. Each row: task_id, sample_index, reward, status (ok, invalid,
    timeout, error), components, verifier provenance, elapsed_s, info, error.
    """
    tasks_path = None if tasks_source.startswith(TASKSET_PREFIX) else Path(tasks_source)
    inputs = [tasks_path, completions_path, config_file]
    check_inputs(tasks_path, completions_path)
    check_output(out_path, inputs)
    if summary_json is not None:
        check_output(summary_json, [*inputs, out_path], "--summary-json")
    to_stdout = is_stdio(out_path)
    if resume and to_stdout:
        raise UserError("--resume needs --out FILE (a run to stdout keeps no partial file)")
    if not resume and not to_stdout and partial_path(out_path).exists():
        raise UserError(
            f"{partial_path(out_path)} holds rows of an interrupted run: add --resume to "
            "continue it, or delete the file to start over"
        )
    config = read_settings(pairs, config_file)
    tasks = load_task_source(tasks_source)
    loaded = load_samples_with_columns(tasks, completions_path)
    samples = [sample for sample, _ in loaded]
    columns = {(s.task.id, s.index): extra for s, extra in loaded if extra}
    log.info("read %d tasks from %s, %d completions from %s", len(tasks), tasks_source,
             len(samples), completions_path)  # fmt: skip
    jobs = bind_rewards(spec, config, samples, tasks_source)
    for name, version, settings in sorted({provenance_key(reward) for reward, _ in jobs}):
        log.info("verifier %s %s, settings %s", name, version, settings)
    finished: list[tuple[Reward, Score]] = []
    context: list[tuple[Reward, Sample]] = []
    if resume:
        resumed = resume_partial(out_path, jobs)
        kept = {(score.task_id, score.sample_index) for _, score in resumed.finished}
        context = [(r, s) for r, s in jobs if r.groups and (s.task.id, s.index) in kept]
        finished, jobs = resumed.finished, resumed.todo
        say(
            f"resuming: {len(finished)} rows kept from {partial_path(out_path)}, "
            f"{len(jobs)} to score" + (f", {resumed.dropped} dropped" if resumed.dropped else "")
        )
        if resumed.why is not None:
            say(f"first dropped row: {resumed.why}")
    rewards = [reward for reward, _ in [*jobs, *finished]]
    sink = (
        contextlib.nullcontext(sys.stdout) if to_stdout else atomic_output(out_path, resumable=True)
    )
    try:
        with (
            sink as out,
            click.progressbar(
                length=len(jobs),
                label="scoring",
                file=sys.stderr,
                hidden=quiet() or not sys.stderr.isatty(),
            ) as bar,
        ):

            def write(score: Score) -> None:
                extra = columns.get((score.task_id, score.sample_index))
                if keep_columns and extra:
                    score = score.model_copy(update={"info": {**score.info, "columns": extra}})
                out.write(score.model_dump_json() + "\n")
                out.flush()
                bar.update(1)

            chosen = make_executor(executor, workers, ray_address)  # type: ignore[arg-type]
            log.info("scoring %d samples (%s executor) -> %s", len(jobs), executor, out_path)
            result = asyncio.run(score_batch(jobs, chosen, write, finished, context=context))
    except KeyboardInterrupt:
        if not to_stdout:
            click.echo(
                f"rlv: interrupted; finished rows are kept in {partial_path(out_path)}: "
                "run the same command with --resume to continue",
                err=True,
            )
        raise
    summary = summarise_scores(result.scores, result.metrics)
    summary["verifier"] = sorted({reward.ref.name for reward in rewards})
    if not quiet():
        click.echo(format_summary(summary, out_path), err=to_stdout)
    if summary_json:
        with atomic_output(summary_json) as handle:
            json.dump(summary, handle, indent=2)


def provenance_key(reward: Reward) -> tuple[str, str, str]:
    return reward.ref.name, reward.ref.version, reward.ref.config_hash


def check_inputs(tasks_path: Path | None, completions_path: Path) -> None:
    if tasks_path is not None and is_stdio(tasks_path) and is_stdio(completions_path):
        raise UserError("--tasks and --completions cannot both read standard input")


def bind_rewards(
    spec: str | None, config: dict[str, Any], samples: list[Sample], tasks_source: str
) -> list[tuple[Reward, Sample]]:
    """Pair each sample with its reward: ``--verifier`` for all, else the task's own."""
    rewards = RewardResolver(spec, config, tasks_source)
    jobs = [(rewards(sample.task), sample) for sample in samples]
    rewards.check_settings_used()
    return jobs


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


TRAIN_EXAMPLE = """\b
Examples:
  rlv train examples/demo/demo.toml                 # local rlv serve, built-in model
  rlv train my.toml --set steps=100 --set verifier_config.rule=log
  rlv train my.toml --backend tinker                # hosted Tinker (TINKER_API_KEY)
  rlv train --resume runs/demo-20261129-173651      # continue a killed run
"""


@cli.command(epilog=TRAIN_EXAMPLE)
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
    from rl_verifier.train.report import write_report

    png, html = write_report(run_dir)
    click.echo(f"run directory: {run_dir}")
    click.echo(f"report: {png} and {html}")


NEW_DEFAULTS = request_defaults()
NEW_EXAMPLE = """\b
Examples:
  rlv new --verifier calibration --model Qwen/Qwen3-8B --rank 32 --steps 50 -o train_cal.py
  rlv new --verifier tool_calls --task taskset:fictopedia --model rlv/tiny-chat \\
      --backend local --environment search_tools --max-turns 4
  rlv new --verifier calibration --model Qwen/Qwen3-8B --standalone   # the loop, in one file
"""


@cli.command("new", epilog=NEW_EXAMPLE)
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


@cli.command(epilog="Example: rlv builder --port 0   # any free port")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port on 127.0.0.1 (0: any free one).",
)
def builder(port: int) -> None:
    """Serve a local page (127.0.0.1 only) that previews and downloads `rlv new` output."""
    try:
        from rl_verifier.web import serve
    except ImportError as exc:
        raise UserError(
            f"rlv builder needs the web extra: pip install 'rl-verifier[web]' ({exc})"
        ) from None
    serve(port, lambda bound: click.echo(f"rlv builder: http://127.0.0.1:{bound}/"))


cli.add_command(reward_server)  # options and server: rl_verifier.reward_server
cli.add_command(cache)  # rlv cache stats|clear: rl_verifier.cli.cache
cli.add_command(eval_command)  # rl_verifier.cli.eval


@cli.command(epilog="Example: rlv report runs/demo-20261129-173651")
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
    plugins_.add_commands(cli)
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
