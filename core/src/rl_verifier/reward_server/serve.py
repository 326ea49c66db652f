"""Start a reward server: check the reward, bind (a taken port is one line), refuse a
non-loopback address without a token, then serve until SIGINT/SIGTERM.

On a signal the server stops accepting connections, answers the requests it holds (each
ends by its deadline), then stops the scorer's workers and exits 0.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from rl_verifier.access import is_loopback
from rl_verifier.atomic import write_text
from rl_verifier.errors import UserError
from rl_verifier.listen import bind_listener
from rl_verifier.reward_server.settings import TOKEN_VARIABLE, ServerOptions
from rl_verifier.scorer import Scorer

GRACE_S = 10.0  # beyond the longest deadline, before in-flight requests are cancelled


def run(options: ServerOptions, announce: Callable[[str], None] | None = None) -> None:
    """Serve ``options.spec`` until a signal; ``announce(url)`` once listening."""
    try:
        import uvicorn

        from rl_verifier.reward_server.app import build_app
    except ImportError as exc:
        raise UserError(
            f"rlv reward-server needs the web extra: pip install 'rl-verifier[web]' ({exc})"
        ) from None
    scorer = Scorer(
        options.spec,
        options.settings,
        executor=options.executor,
        workers=options.workers,
        address=options.address,
    )
    sock = bind_listener(options.host, options.port, "rlv reward-server")
    address, port = sock.getsockname()[:2]
    if not options.token and not is_loopback(address):
        sock.close()
        scorer.close()
        raise UserError(
            f"refusing to serve on {options.host} without a token: anyone who reaches it "
            f"could run the verifiers; pass --token (or {TOKEN_VARIABLE}), or bind to 127.0.0.1"
        )
    host = f"[{options.host}]" if ":" in options.host else options.host
    url = f"http://{host}:{port}"

    async def ready() -> None:
        if options.port_file is not None:
            write_text(options.port_file, str(port))
        if announce is not None:
            announce(url)

    config = uvicorn.Config(
        build_app(scorer, options, ready),
        log_level="warning",
        access_log=False,
        timeout_keep_alive=75,
        timeout_graceful_shutdown=int(options.limits.deadline_s + GRACE_S),
    )
    try:
        with _signals_end_quietly():
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        scorer.close()  # already closed after a clean shutdown; safe twice


@contextlib.contextmanager
def _signals_end_quietly() -> Iterator[None]:
    """uvicorn re-raises the signal that stopped it once it has shut down gracefully;
    here that ends the command normally instead of killing it a second time."""
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
