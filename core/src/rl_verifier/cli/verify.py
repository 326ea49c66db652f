"""``rlv verify``: score a file of completions into a file of score rows."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from rl_verifier.base.contracts import TASKSET_PREFIX, Score
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.cli.options import executor_option, quiet, read_settings, say, settings_options
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

log = logging.getLogger("rl_verifier.cli.verify")


VERIFY_EXAMPLE = """\b
Examples:
  rlv verify --verifier calibration --config rule=log \\
      --tasks tasks.jsonl --completions completions.jsonl --out scores.jsonl
  rlv verify --verifier '0.8*exact_match + 0.2*format' --tasks taskset:calibration-example \\
      --completions c.jsonl --out -          # score rows to stdout
  rlv verify ... --out scores.jsonl --resume  # continue after Ctrl-C
"""


@click.command(epilog=VERIFY_EXAMPLE)
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
