"""Adds ``rlv serve`` to the CLI. Heavy imports wait until the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from rl_verifier import hookimpl
from rl_verifier_server.paths import default_data_dir


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
        "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True
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
    def serve(
        host: str,
        port: int,
        data_dir: Path | None,
        device: str,
        preload: tuple[str, ...],
        port_file: Path | None,
    ) -> None:
        """Serve the Tinker API locally: LoRA training and sampling with torch."""
        from rl_verifier_server.serve import run_server

        run_server(
            host=host,
            port=port,
            data_dir=data_dir or default_data_dir(),
            device=None if device == "auto" else device,
            preload=[name for name in preload if name],
            port_file=port_file,
        )
