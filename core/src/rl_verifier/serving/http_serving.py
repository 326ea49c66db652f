"""Serving HTTP for ``rlv reward-server`` and ``rlv serve``: one start-up for both.

Both servers run uvicorn on a socket bound beforehand (``listen.bind_listener``), print a
URL that works for IPv6 too, close a connection whose request line and headers do not
arrive within ``HEADER_TIMEOUT_S``, and end with status 0 after a graceful stop on SIGINT
or SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

HEADER_TIMEOUT_S = 15.0  # from a connection's first byte (or the end of its last answer)
KEEP_ALIVE_S = 75  # an idle keep-alive connection is closed after this long


def url_for(host: str, port: int) -> str:
    """``http://host:port``, with an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def uvicorn_server(
    app: Any, graceful_s: float, header_timeout_s: float = HEADER_TIMEOUT_S
) -> uvicorn.Server:
    """A quiet uvicorn server for ``app`` that drops connections with slow headers."""
    import uvicorn

    from rl_verifier.serving.slow_headers import protocol_with_header_timeout

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        http=protocol_with_header_timeout(header_timeout_s),
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=max(1, round(graceful_s)),
    )
    return uvicorn.Server(config)


@contextlib.contextmanager
def signals_end_quietly() -> Iterator[None]:
    """uvicorn re-raises the signal that stopped it once it has shut down gracefully
    (the process would end with -15); here that ends the command with status 0 instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.stderr.flush()
