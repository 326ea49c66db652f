"""``rlv reward-server``: its options, turned into ``ServerOptions`` and handed to ``run``."""

from __future__ import annotations

from pathlib import Path

import click

from rl_verifier.base.errors import UserError
from rl_verifier.cli.options import executor_option, read_settings, settings_options
from rl_verifier.reward_server.settings import (
    MIB,
    TOKEN_VARIABLE,
    RewardServerLimits,
    ServerOptions,
    check_token,
)

DEFAULTS = RewardServerLimits()
EXAMPLE = f"""\b
Examples:
  rlv reward-server --reward exact_match --port 8787
  curl -s localhost:8787/v1/score -d '{{"tasks": [{{"id": "q", "prompt": "2+2?",
      "reference": {{"answer": "4"}}}}], "completions": [{{"task_id": "q",
      "completion": "<answer>4</answer>"}}]}}'
  {TOKEN_VARIABLE}=$(python -c 'import secrets; print(secrets.token_urlsafe())') \\
      rlv reward-server --host 0.0.0.0 --reward '0.8*exact_match + 0.2*format'
  # OpenRLHF: --reward.remote_url http://HOST:8787/get_reward (docs/reward-server.md)
"""


@click.command("reward-server", epilog=EXAMPLE)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; any non-loopback address needs --token.",
)
@click.option(
    "--port",
    default=8787,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free one).",
)
@click.option(
    "--reward",
    "spec",
    required=True,
    metavar="SPEC",
    help="Verifier name or reward spec, e.g. '0.8*exact_match + 0.2*format'.",
)
@settings_options
@click.option(
    "--token",
    envvar=TOKEN_VARIABLE,
    metavar="TOKEN",
    help=f"Bearer token clients must send (also {TOKEN_VARIABLE}); required "
    "to bind beyond loopback.",
)
@executor_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Checks run at once (worker processes) [default: one per core].",
)
@click.option("--ray-address", help="Ray cluster to join (--executor ray) [default: start one].")
@click.option(
    "--max-body-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULTS.max_body_bytes / MIB,
    show_default=True,
    help="Largest request body (413 above it).",
)
@click.option(
    "--max-pending-samples",
    type=click.IntRange(min=1),
    default=DEFAULTS.max_pending_samples,
    show_default=True,
    help="Samples admitted and not yet answered, over all requests; a request "
    "past it gets 429 with Retry-After (a batch larger than it: 413).",
)
@click.option(
    "--max-pending-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULTS.max_pending_bytes / MIB,
    show_default=True,
    help="Request bodies held at once, over all requests (429 above it).",
)
@click.option(
    "--deadline-s",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULTS.deadline_s,
    show_default=True,
    help="Longest a request may take; samples unscored by then are 'timeout' rows. "
    "Clients may ask for less.",
)
@click.option(
    "--failed-reward",
    type=float,
    default=0.0,
    show_default=True,
    help="Reward /get_reward reports for a 'timeout' or 'error' sample (OpenRLHF "
    "needs a number; extra_logs.rlv_judged marks it 0).",
)
@click.option(
    "--port-file", type=click.Path(path_type=Path), help="Write the bound port here once listening."
)
def reward_server(
    host: str,
    port: int,
    spec: str,
    pairs: tuple[str, ...],
    config_file: Path | None,
    token: str | None,
    executor: str,
    workers: int | None,
    ray_address: str | None,
    max_body_mb: float,
    max_pending_samples: int,
    max_pending_mb: float,
    deadline_s: float,
    failed_reward: float,
    port_file: Path | None,
) -> None:
    """Serve a reward over HTTP for any trainer: POST /v1/score (tasks and completions in,
    the score rows `rlv verify` writes out) and OpenRLHF's POST /get_reward; GET /healthz
    and /metrics (Prometheus). Stops on Ctrl-C or SIGTERM once in-flight batches are
    answered. See docs/reward-server.md.
    """
    try:
        from rl_verifier.reward_server.serve import run
    except ImportError as exc:
        raise UserError(
            f"rlv reward-server needs the web extra: pip install 'rl-verifier[web]' ({exc})"
        ) from None

    options = ServerOptions(
        spec=spec,
        settings=read_settings(pairs, config_file),
        host=host,
        port=port,
        token=check_token(token) if token else None,
        executor=executor,  # type: ignore[arg-type]
        workers=workers,
        address=ray_address,
        failed_reward=failed_reward,
        port_file=port_file,
        limits=RewardServerLimits(
            max_body_bytes=int(max_body_mb * MIB),
            max_pending_samples=max_pending_samples,
            max_pending_bytes=int(max_pending_mb * MIB),
            deadline_s=deadline_s,
        ),
    )
    run(options, lambda url: click.echo(f"rlv reward-server: {spec} on {url}", err=True))
