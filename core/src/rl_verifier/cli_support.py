"""Public plumbing for the commands that companion packages add to ``rlv``.

``rlv serve`` (``rl_verifier_server``) and ``rlv sandbox`` (``rl_verifier_sandbox``) import
these from here, never from the private modules behind them: a listening socket whose
errors are one line, the HTTP start-up both servers share, loopback checks and
constant-time key comparison for local servers, the rule for JSON that comes in from
outside, and the ``rlv`` entry point itself.
"""

from rl_verifier.access import is_loopback, key_matches
from rl_verifier.http_serving import (
    HEADER_TIMEOUT_S,
    signals_end_quietly,
    url_for,
    uvicorn_server,
)
from rl_verifier.json_input import MAX_DEPTH, check_input, printable
from rl_verifier.listen import bind_listener

__all__ = [
    "HEADER_TIMEOUT_S",
    "MAX_DEPTH",
    "bind_listener",
    "check_input",
    "is_loopback",
    "key_matches",
    "printable",
    "rlv_main",
    "signals_end_quietly",
    "url_for",
    "uvicorn_server",
]


def rlv_main() -> None:
    """Run the ``rlv`` command on ``sys.argv`` (exits like ``rlv`` does)."""
    from rl_verifier.cli import main  # on call: the CLI loads much a server does not need

    main()
