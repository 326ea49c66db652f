"""The ``rlv eval`` command group: an eval (or a re-score), and ``rlv eval compare``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from rl_verifier.base.contracts import TASKSET_PREFIX
from rl_verifier.base.errors import UserError
from rl_verifier.cli.options import executor_option, read_settings, settings_options

DEFAULT_KS = (1, 5, 10)
EXAMPLE = """\b
Examples:
  rlv eval --model rlv/tiny-chat --tasks taskset:exact_match-example -n 8 -k 1,4,8 --out evals/base
  rlv eval --model runs/demo-20261129-173651 --tasks held_out.jsonl -n 8 --out evals/trained
  rlv eval --model rlv/tiny-chat --tasks t.jsonl -n 16 --out evals/base --resume   # after a kill
  rlv eval --rescore evals/base/samples.jsonl --reward format --out evals/base-format
  rlv eval compare evals/base evals/trained
"""


def absolute_source(source: str | None) -> str | None:
    """A tasks file or model directory as an absolute path, so ``eval.json`` names it from
    anywhere; task sets, model names and checkpoints as they are."""
    if source is None or source.startswith((TASKSET_PREFIX, "tinker://")) or source == "-":
        return source
    return os.path.abspath(source) if Path(source).expanduser().exists() else source


def parse_ks(text: str | None, n: int) -> list[int]:
    if text is None:
        return [k for k in DEFAULT_KS if k <= n] or [n]
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UserError(f"-k {text}: expected comma-separated integers, e.g. 1,5,10") from None
    if not ks:
        raise UserError(f"-k {text}: no k given")
    return ks


@click.group("eval", invoke_without_command=True, epilog=EXAMPLE)
@click.option("--model", metavar="MODEL", help="A base model (name or directory), a "
              "tinker:// checkpoint (with --base-url), or a training run directory (its last "
              "checkpoint).")  # fmt: skip
@click.option("--tasks", "tasks_source", metavar="PATH|taskset:NAME",
              help="Tasks JSONL or a plugin's task set (as in rlv verify).")  # fmt: skip
@click.option("--reward", metavar="SPEC", help="Verifier name or reward spec for every task "
              "[default: each task's own 'verifier' field].")  # fmt: skip
@settings_options
@click.option("-n", "n", type=click.IntRange(min=1), default=8, show_default=True,
              help="Samples per task.")  # fmt: skip
@click.option("-k", "ks", metavar="K,K,...", help="The k of pass@k and cons@k, each <= n "
              "[default: those of 1,5,10 that are <= n].")  # fmt: skip
@click.option("--threshold", type=float, default=1.0, show_default=True,
              help="A sample is a success when its reward is at least this.")  # fmt: skip
@click.option("--out", "out", type=click.Path(path_type=Path), help="The eval's folder "
              "[default: evals/TIME].")  # fmt: skip
@click.option("--resume", is_flag=True, help="Continue the eval in --out: sample only "
              "what is missing (same seed: same samples).")  # fmt: skip
@click.option("--rescore", type=click.Path(path_type=Path), metavar="SAMPLES",
              help="Score an eval's samples.jsonl again (with --reward) into --out, "
              "without sampling.")  # fmt: skip
@click.option("--max-tokens", type=click.IntRange(min=1), default=256, show_default=True,
              help="Tokens per model turn.")  # fmt: skip
@click.option("--temperature", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Sampling temperature.")  # fmt: skip
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=1.0,
              show_default=True, help="Nucleus sampling.")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True,
              help="Each sample's seed: from it, the task id and the index.")  # fmt: skip
@click.option("--environment", default="single_turn", show_default=True,
              help="A registered environment (multi-turn tool use via plugins).")  # fmt: skip
@click.option("--max-turns", type=click.IntRange(min=1), default=1, show_default=True,
              help="Model turns per episode.")  # fmt: skip
@click.option("--base-url", metavar="URL", help="A running Tinker API (hosted, or an rlv "
              "serve) [default: start rlv serve here]; the key is TINKER_API_KEY.")  # fmt: skip
@click.option("--openai-base-url", metavar="URL", help="Sample from an OpenAI-compatible "
              "API instead (/v1/chat/completions; --model is its model name; the key is "
              "OPENAI_API_KEY).")  # fmt: skip
@executor_option
@click.option("--workers", type=click.IntRange(min=1), help="Workers [default: one per core].")
@click.pass_context
def eval_command(
    ctx: click.Context,
    model: str | None,
    tasks_source: str | None,
    reward: str | None,
    pairs: tuple[str, ...],
    config_file: Path | None,
    n: int,
    ks: str | None,
    threshold: float,
    out: Path | None,
    resume: bool,
    rescore: Path | None,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    environment: str,
    max_turns: int,
    base_url: str | None,
    openai_base_url: str | None,
    executor: str,
    workers: int | None,
) -> None:
    """Sample a model N times per task, score, and estimate pass@k, cons@k and mean reward.

    The folder gets eval.json (the settings), samples.jsonl (each completion with its
    score), summary.json (per task and overall, with 95% intervals) and report.png/html.
    """
    if ctx.invoked_subcommand is not None:
        return
    from rl_verifier.evaluation.evaluate import (
        EvalRequest,
        RescoreRequest,
        evaluate,
    )
    from rl_verifier.evaluation.evaluate import (
        rescore as rescore_samples,
    )
    from rl_verifier.evaluation.report import summary_rows
    from rl_verifier.evaluation.sampling import SamplingSettings

    settings = read_settings(pairs, config_file)
    tasks_source = absolute_source(tasks_source)
    if openai_base_url is None:  # else the model is the API's name for it
        model = absolute_source(model)
    folder = out or Path(f"evals/{time.strftime('%Y%m%d-%H%M%S')}")
    if rescore is not None:
        if out is None:
            raise UserError("--rescore needs --out, a new folder for the re-scored eval")
        summary = rescore_samples(
            RescoreRequest(rescore, out, reward, settings, tasks_source,
                           parse_ks(ks, n) if ks else None, threshold, executor, workers)
        )  # fmt: skip
    else:
        if model is None or tasks_source is None:
            raise UserError("rlv eval needs --model and --tasks (or --rescore SAMPLES)")
        if base_url and openai_base_url:
            raise UserError("give --base-url (Tinker) or --openai-base-url, not both")
        if resume and out is None:
            raise UserError("--resume needs --out, the eval's folder")
        request = EvalRequest(
            model=model,
            tasks=tasks_source,
            out=folder,
            n=n,
            ks=parse_ks(ks, n),
            reward=reward,
            verifier_config=settings,
            threshold=threshold,
            sampling=SamplingSettings(max_tokens, temperature, top_p, seed),
            environment=environment,
            max_turns=max_turns,
            base_url=base_url,
            openai_base_url=openai_base_url,
            resume=resume,
            executor=executor,
            workers=workers,
        )
        summary = evaluate(request)
    for label, text in summary_rows(summary):
        click.echo(f"{label:<14} {text}")
    click.echo(f"eval folder: {folder}")


@eval_command.command("compare", epilog="Example: rlv eval compare evals/base evals/trained")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(a: Path, b: Path, as_json: bool) -> None:
    """The paired difference B - A of two evals over their shared tasks, with a 95% interval."""
    from rl_verifier.evaluation.compare import compare, format_comparison

    results = compare(a, b)
    click.echo(json.dumps(results, indent=2) if as_json else format_comparison(results, a, b))
