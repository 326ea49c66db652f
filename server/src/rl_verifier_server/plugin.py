"""Adds ``rlv serve`` to the CLI. Heavy imports wait until the command runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from rl_verifier import hookimpl
from rl_verifier_server.limits import Limits
from rl_verifier_server.paths import default_data_dir

DEFAULTS = Limits()


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.command()
    @click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
    @click.option(
        "--port",
        default=8000,
        show_default=True,
        type=click.IntRange(0, 65535),
        help="Port; 0 picks a free one.",
    )
    @click.option(
        "--data-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Checkpoints live here [default: $RLV_SERVER_DIR or ~/.cache/rl-verifier/server].",
    )
    @click.option(
        "--device",
        type=click.Choice(["auto", "cpu", "cuda"]),
        default="auto",
        show_default=True,
        help="Torch device; auto: cuda when available, else cpu.",
    )
    @click.option(
        "--preload",
        multiple=True,
        default=["rlv/tiny-chat"],
        show_default=True,
        help="Base models to load at start (repeatable; '' for none).",
    )
    @click.option(
        "--port-file",
        type=click.Path(path_type=Path),
        default=None,
        help="Write the bound port here once listening.",
    )
    @click.option(
        "--api-key",
        "api_keys",
        multiple=True,
        help="A key clients must send (repeatable; also $RLV_SERVE_API_KEYS, comma-separated). "
        "Required off loopback.",
    )
    @click.option(
        "--models-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Clients may also name model directories under this one.",
    )
    @click.option(
        "--max-body-mb",
        type=click.IntRange(1),
        default=DEFAULTS.max_body_mb,
        show_default=True,
        help="Largest request body.",
    )
    @click.option(
        "--max-tokens",
        type=click.IntRange(1),
        default=DEFAULTS.max_tokens,
        show_default=True,
        help="Largest max_tokens of a sampling request.",
    )
    @click.option(
        "--max-num-samples",
        type=click.IntRange(1),
        default=DEFAULTS.max_num_samples,
        show_default=True,
        help="Largest num_samples of a sampling request.",
    )
    @click.option(
        "--max-training-clients",
        type=click.IntRange(1),
        default=DEFAULTS.max_training_clients,
        show_default=True,
        help="Live training clients; more are refused (429) until sessions end.",
    )
    @click.option(
        "--max-samplers",
        type=click.IntRange(1),
        default=DEFAULTS.max_samplers,
        show_default=True,
        help="Sampler snapshots held; beyond it the least recently used is released.",
    )
    @click.option(
        "--session-timeout",
        type=click.FloatRange(1),
        default=DEFAULTS.session_timeout_s,
        show_default=True,
        help="Seconds without a heartbeat or call after which a session is ended.",
    )
    def serve(
        host: str,
        port: int,
        data_dir: Path | None,
        device: str,
        preload: tuple[str, ...],
        port_file: Path | None,
        api_keys: tuple[str, ...],
        models_dir: Path | None,
        max_body_mb: int,
        max_tokens: int,
        max_num_samples: int,
        max_training_clients: int,
        max_samplers: int,
        session_timeout: float,
    ) -> None:
        """Serve the Tinker API locally: LoRA training and sampling with torch."""
        from rl_verifier_server.auth import KEYS_VARIABLE, collect_keys
        from rl_verifier_server.serve import run_server

        run_server(
            host=host,
            port=port,
            data_dir=data_dir or default_data_dir(),
            device=None if device == "auto" else device,
            preload=[name for name in preload if name],
            port_file=port_file,
            api_keys=collect_keys(api_keys, os.environ.get(KEYS_VARIABLE)),
            models_dir=models_dir,
            limits=Limits(
                max_body_mb=max_body_mb,
                max_tokens=max_tokens,
                max_num_samples=max_num_samples,
                max_training_clients=max_training_clients,
                max_samplers=max_samplers,
                session_timeout_s=session_timeout,
            ),
        )
