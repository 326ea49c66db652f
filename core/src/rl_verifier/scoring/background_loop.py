"""An asyncio event loop on its own daemon thread, for callers that are not async.

Synchronous code hands it coroutines and blocks on the result; async code on any other
loop awaits the same futures. Everything the loop owns (executors, worker processes)
lives on that one thread, so callers on many threads never share asyncio objects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """A running event loop on a daemon thread; ``stop()`` ends it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def on_loop_thread(self) -> bool:
        """Whether the caller is running on this loop's own thread."""
        return threading.get_ident() == self.thread.ident

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the future is safe to wait on from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coro`` on the loop and block until it finishes."""
        if self.on_loop_thread:
            coro.close()
            raise RuntimeError("blocking call made from the background loop's own thread")
        return self.submit(coro).result(timeout_s)

    def stop(self, timeout_s: float | None = None) -> None:
        """End the loop (pending work is cancelled) and wait for its thread."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # closed between the check and the call
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.on_loop_thread:
            self.thread.join(timeout_s)
