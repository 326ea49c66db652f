"""Deprecated name of ``rl_verifier.train.script_writer`` (``rlv new``'s script writer)."""

from rl_verifier.train.script_writer import *  # noqa: F403
from rl_verifier.train.script_writer import (  # noqa: F401 - the names importers used
    BACKENDS,
    BuildError,
    BuildRequest,
    BuiltLoop,
    render_loop,
    request_defaults,
    script_path,
    write_loop,
)
