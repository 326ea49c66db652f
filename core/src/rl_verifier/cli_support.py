"""Public plumbing for the commands that companion packages add to ``rlv``.

``rlv serve`` (``rl_verifier_server``) and ``rlv sandbox`` (``rl_verifier_sandbox``) import
these from here, never from the private modules behind them: a listening socket whose
errors are one line, the HTTP start-up both servers share, loopback checks and
constant-time key comparison for local servers, the rule for JSON that comes in from
outside, the loaded plugins' registries (the sandbox's backend table reads them; the
server's loss table is core's), and the ``rlv`` entry point itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rl_verifier.discovery.losses import CLIP_INPUTS, RL_INPUTS, SEQUENCE_INPUTS, loss_table
from rl_verifier.parsing.json_input import MAX_DEPTH, check_input, printable
from rl_verifier.serving.access import is_loopback, key_matches
from rl_verifier.serving.http_serving import (
    HEADER_TIMEOUT_S,
    signals_end_quietly,
    url_for,
    uvicorn_server,
)
from rl_verifier.serving.listen import bind_listener

if TYPE_CHECKING:
    from rl_verifier.discovery.plugins import Plugins

__all__ = [
    "CLIP_INPUTS",
    "HEADER_TIMEOUT_S",
    "MAX_DEPTH",
    "RL_INPUTS",
    "SEQUENCE_INPUTS",
    "bind_listener",
    "check_input",
    "is_loopback",
    "key_matches",
    "loaded_plugins",
    "loss_table",
    "printable",
    "rlv_main",
    "signals_end_quietly",
    "url_for",
    "uvicorn_server",
]


def rlv_main() -> None:
    """Run the ``rlv`` command on ``sys.argv`` (exits like ``rlv`` does)."""
    from rl_verifier.cli.app import main  # on call: the CLI loads much a server does not need

    main()


def loaded_plugins() -> Plugins | None:
    """The process-wide plugins if they are loaded already, else None (no discovery)."""
    from rl_verifier.discovery.plugins import loaded_plugins as loaded

    return loaded()
