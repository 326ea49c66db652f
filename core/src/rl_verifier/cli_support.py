"""Public plumbing for the commands that companion packages add to ``rlv``.

``rlv serve`` (``rl_verifier_server``) and ``rlv sandbox`` (``rl_verifier_sandbox``) import
these from here, never from the private modules behind them: a listening socket whose
errors are one line, loopback checks and constant-time key comparison for local servers,
and the ``rlv`` entry point itself.
"""

from rl_verifier.access import is_loopback, key_matches
from rl_verifier.listen import bind_listener

__all__ = ["bind_listener", "is_loopback", "key_matches", "rlv_main"]


def rlv_main() -> None:
    """Run the ``rlv`` command on ``sys.argv`` (exits like ``rlv`` does)."""
    from rl_verifier.cli import main  # on call: the CLI loads much a server does not need

    main()
