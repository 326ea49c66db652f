"""``rlv builder``: the local page that previews ``rlv new`` output."""

from __future__ import annotations

import click

from rl_verifier.base.errors import UserError


@click.command(epilog="Example: rlv builder --port 0   # any free port")
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
