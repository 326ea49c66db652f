"""Start a reward server: check the reward, bind (a taken port is one line), refuse a
non-loopback address without a token, then serve until SIGINT/SIGTERM.

On a signal the server stops accepting connections, answers the requests it holds (each
ends by its deadline), then stops the scorer's workers and exits 0.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import uvicorn

from rl_verifier.base.errors import UserError
from rl_verifier.files.atomic import write_text
from rl_verifier.reward_server.app import RewardService, build_app
from rl_verifier.reward_server.settings import TOKEN_VARIABLE, ServerOptions
from rl_verifier.scoring.scorer import Scorer
from rl_verifier.serving.access import is_loopback
from rl_verifier.serving.http_serving import signals_end_quietly, url_for, uvicorn_server
from rl_verifier.serving.listen import bind_listener

GRACE_S = 10.0  # beyond the longest deadline, before in-flight requests are cancelled


@dataclass
class BoundServer:
    """A reward server bound to its port, not yet serving."""

    server: uvicorn.Server
    sock: socket.socket
    scorer: Scorer
    service: RewardService
    url: str

    def serve(self) -> None:
        """Serve until ``stop()`` or a signal; then the scorer's workers are stopped."""
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.scorer.close()  # already closed after a clean shutdown; safe twice

    def stop(self) -> None:
        """Shut down as SIGTERM would: answer the requests held, then stop."""
        self.server.should_exit = True


def bind(options: ServerOptions, announce: Callable[[str], None] | None = None) -> BoundServer:
    """Check the reward, bind, and refuse a non-loopback address without a token;
    ``announce(url)`` is called once the server is serving."""
    scorer = Scorer(
        options.spec,
        options.settings,
        executor=options.executor,
        workers=options.workers,
        address=options.address,
    )
    try:
        sock = bind_listener(options.host, options.port, "rlv reward-server")
    except UserError:
        scorer.close()
        raise
    address, port = sock.getsockname()[:2]
    if not options.token and not is_loopback(address):
        sock.close()
        scorer.close()
        raise UserError(
            f"refusing to serve on {options.host} without a token: anyone who reaches it "
            f"could run the verifiers; pass --token (or {TOKEN_VARIABLE}), or bind to 127.0.0.1"
        )
    url = url_for(options.host, port)

    async def ready() -> None:
        if options.port_file is not None:
            write_text(options.port_file, str(port))
        if announce is not None:
            announce(url)

    app = build_app(scorer, options, ready)
    server = uvicorn_server(app, graceful_s=options.limits.deadline_s + GRACE_S)
    return BoundServer(server, sock, scorer, app.state.service, url)


def run(options: ServerOptions, announce: Callable[[str], None] | None = None) -> None:
    """Serve ``options.spec`` until SIGINT or SIGTERM; ``announce(url)`` once listening."""
    bound = bind(options, announce)
    with signals_end_quietly():
        bound.serve()


@contextlib.contextmanager
def serving_in_thread(
    options: ServerOptions, start_timeout_s: float = 60.0
) -> Iterator[BoundServer]:
    """A reward server on a background thread of this process (for scripts and tests);
    shut down gracefully when the block ends."""
    started = threading.Event()
    failures: list[BaseException] = []
    bound = bind(options, lambda url: started.set())

    def serve() -> None:
        try:
            bound.serve()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failures.append(exc)
        finally:
            started.set()

    thread = threading.Thread(target=serve, name="rlv reward-server", daemon=True)
    thread.start()
    try:
        if not started.wait(start_timeout_s):
            raise RuntimeError(f"the reward server did not start within {start_timeout_s}s")
        if failures:
            raise failures[0]
        yield bound
    finally:
        bound.stop()
        thread.join()
