"""Where the Tinker API is: a local ``rlv serve`` started for the run, or the hosted service."""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rl_verifier.base.errors import UserError
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.rundir import RunDir

TINKER_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod"


@dataclass(frozen=True)
class Connection:
    base_url: str | None
    api_key: str
    # How the run's own local server ended, once it has ended before the run ('' until then).
    server_ended: Callable[[], str] = lambda: ""


def require_key(config: TrainConfig) -> str:
    """The API key for a hosted run; checked before any work starts."""
    key = os.environ.get("TINKER_API_KEY", "")
    if config.backend == "tinker" and not key:
        raise UserError(
            "backend=tinker needs TINKER_API_KEY in the environment "
            "(or use --backend local to train on this machine)"
        )
    return key


@contextlib.contextmanager
def connect(config: TrainConfig, run_dir: Path) -> Iterator[Connection]:
    """Yield a reachable API; a local server lives as long as the block."""
    if config.backend == "tinker":
        key = require_key(config)
        url = config.base_url or os.environ.get("TINKER_BASE_URL") or None
        check_reachable(url or TINKER_URL)
        yield Connection(url, key)
        return
    run = RunDir(run_dir)
    with local_server(run.server_data, config.base_model, run.server_log) as local:
        yield local


@contextlib.contextmanager
def local_server(data_dir: Path, base_model: str, log_path: Path) -> Iterator[Connection]:
    """A ``rlv serve`` on ``data_dir`` with ``base_model`` preloaded, for the block."""
    try:
        from rl_verifier_server.launch import LocalServer
    except ImportError:
        raise UserError(
            "backend=local needs rl-verifier-server: pip install 'rl-verifier[local]'"
        ) from None
    server = LocalServer(data_dir, preload=(base_model,), log_path=log_path)
    server.start()
    ended: list[str] = []
    stop_run = run_stopper()

    def on_exit(how: str) -> None:  # stop the run now: the SDK would retry for ever
        ended.append(how)
        stop_run()

    server.watch(on_exit)
    try:
        yield Connection(server.url, "tml-local", lambda: ended[0] if ended else "")
    except (KeyboardInterrupt, asyncio.CancelledError):
        if ended:
            raise UserError(
                f"the local rlv serve {ended[0]} (its log: {log_path}); the run stopped "
                "and `rlv train CONFIG --resume RUN_DIR` continues it from its last checkpoint"
            ) from None
        raise
    finally:
        server.stop()


def run_stopper() -> Callable[[], None]:
    """A thread-safe way to stop the caller: cancel its asyncio task (the run's task, when
    called from inside it), else interrupt the main thread. Not by SIGINT: a process started
    in the background of a shell ignores it."""
    try:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
    except RuntimeError:
        return _thread.interrupt_main
    if task is None:
        return _thread.interrupt_main
    running = task

    def cancel() -> None:
        loop.call_soon_threadsafe(running.cancel)

    return cancel


def check_reachable(url: str, timeout_s: float = 10.0) -> None:
    """Fail fast, instead of inside the SDK's silent multi-minute retries."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(f"{url}/api/v1/healthz", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return  # it answered: reachable
    except OSError as exc:
        raise UserError(f"cannot reach the Tinker API at {url}: {exc}") from None
