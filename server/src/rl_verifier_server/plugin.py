"""Adds ``rlv serve`` and ``rlv export`` to the CLI. Heavy imports wait until a command
runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rl_verifier import hookimpl
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.base.paths import default_data_dir

DEFAULTS = ServerLimits()
# Each field of ServerLimits as an option of rlv serve (its default is the field's).
LIMIT_OPTIONS: dict[str, tuple[str, click.ParamType[Any], str]] = {
    "max_body_mb": (
        "--max-body-mb",
        click.IntRange(1),
        "Largest request body; a forward_backward's loss inputs, sparse ones expanded, may "
        "hold a quarter of it in values.",
    ),
    "max_tokens": ("--max-tokens", click.IntRange(1), "Largest max_tokens of a sampling request."),
    "max_num_samples": (
        "--max-num-samples",
        click.IntRange(1),
        "Largest num_samples of a sampling request.",
    ),
    "max_prompt_chars": (
        "--max-prompt-chars",
        click.IntRange(1),
        "Most characters of a sampling request's prompt text, checked before tokenising; "
        "a JSON body may hold 16 bytes per such character plus 1 MiB.",
    ),
    "max_training_clients": (
        "--max-training-clients",
        click.IntRange(1),
        "Live training clients; more are refused (429) until sessions end.",
    ),
    "max_samplers": (
        "--max-samplers",
        click.IntRange(1),
        "Sampler snapshots held; beyond it the least recently used is released.",
    ),
    "session_timeout_s": (
        "--session-timeout",
        click.FloatRange(1),
        "Seconds without a heartbeat or call after which a session is ended.",
    ),
    "batch_memory_gb": (
        "--batch-memory-gb",
        click.FloatRange(0.01),
        "GiB of activations one forward/forward_backward micro-batch may take, as estimated "
        "from the model's config; datums are split into micro-batches to stay under it.",
    ),
}


def limit_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add an option per ``LIMIT_OPTIONS`` entry, in table order."""
    for field, (flag, kind, text) in reversed(LIMIT_OPTIONS.items()):
        default = getattr(DEFAULTS, field)
        option = click.option(flag, field, type=kind, default=default, show_default=True, help=text)
        command = option(command)
    return command


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
        "Required off loopback. The server is single-tenant: every key may list, use and "
        "delete every run and checkpoint.",
    )
    @click.option(
        "--models-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Clients may also name model directories under this one.",
    )
    @limit_options
    def serve(
        host: str,
        port: int,
        data_dir: Path | None,
        device: str,
        preload: tuple[str, ...],
        port_file: Path | None,
        api_keys: tuple[str, ...],
        models_dir: Path | None,
        **limits: Any,
    ) -> None:
        """Serve the Tinker API locally: LoRA training and sampling with torch."""
        from rl_verifier_server.http.auth import KEYS_VARIABLE, collect_keys
        from rl_verifier_server.serving.serve import run_server

        run_server(
            host=host,
            port=port,
            data_dir=data_dir or default_data_dir(),
            device=None if device == "auto" else device,
            preload=[name for name in preload if name],
            port_file=port_file,
            api_keys=collect_keys(api_keys, os.environ.get(KEYS_VARIABLE)),
            models_dir=models_dir,
            limits=ServerLimits(**limits),
        )

    @cli.command(
        "export",
        epilog="Example: rlv export runs/demo-20261129-173651 --out adapter/",
    )
    @click.argument("source")
    @click.option(
        "--out",
        type=click.Path(path_type=Path, file_okay=False),
        required=True,
        help="Folder to write the adapter to (adapter_model.safetensors, adapter_config.json).",
    )
    @click.option(
        "--data-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="The rlv serve data directory holding the checkpoint [default: RUN_DIR/server "
        "for a local rlv train run, else $RLV_SERVER_DIR or ~/.cache/rl-verifier/server].",
    )
    @click.option("--force", is_flag=True, help="Replace a non-empty --out folder.")
    def export(source: str, out: Path, data_dir: Path | None, force: bool) -> None:
        """Write a checkpoint of rlv serve as a standard peft LoRA adapter.

        SOURCE is a tinker://RUN/KIND/NAME path or a run directory (its latest checkpoint).
        The adapter loads with peft's PeftModel.from_pretrained onto its base model, or in
        any server that loads peft adapters. No server needs to run.
        """
        from rl_verifier_server.checkpoints.export_command import export_checkpoint

        done = export_checkpoint(source, out, data_dir, force)
        click.echo(
            f"{done.checkpoint} (LoRA rank {done.rank} on {done.base_model}) -> {out}: "
            + ", ".join(done.files)
        )
