"""A pool of Lean REPLs, each keeping one loaded environment per header."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from rl_verifier_lean.repl import Repl


class ReplPool:
    """At most ``size`` REPLs, started lazily; one proof at a time per REPL. A REPL is
    closed instead of returned when unhealthy, used ``max_uses`` times, or above
    ``max_rss_mb``."""

    def __init__(
        self,
        factory: Callable[[], Awaitable[Repl]],
        size: int,
        max_uses: int,
        max_rss_mb: int | None = None,
    ) -> None:
        self.factory = factory
        self.size = size
        self.max_uses = max_uses
        self.max_rss_mb = max_rss_mb
        self.started = 0
        self.retired = 0
        self._idle: list[Repl] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(size)
        self._closing: set[asyncio.Task[None]] = set()

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # REPL pipes belong to one event loop
            for repl in self._idle:
                repl.kill()
                repl.process.release()
            self._idle, self._loop = [], loop
            self._slots = asyncio.Semaphore(self.size)
            self._closing = set()

    async def acquire(self) -> Repl:
        self._bind_loop()
        await self._slots.acquire()
        try:
            while self._idle:
                repl = self._idle.pop()
                if repl.alive:
                    return repl
                await repl.close()
            repl = await self.factory()
            self.started += 1
            return repl
        except BaseException:
            self._slots.release()
            raise

    def release(self, repl: Repl, healthy: bool) -> None:
        self._slots.release()
        repl.uses += 1
        too_big = self.max_rss_mb is not None and repl.rss_mb() > self.max_rss_mb
        if healthy and repl.alive and repl.uses < self.max_uses and not too_big:
            self._idle.append(repl)
            return
        self.retired += 1
        repl.kill()
        try:
            task = asyncio.get_running_loop().create_task(repl.close())
        except RuntimeError:  # no loop left to close it on
            repl.process.release()
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for repl in idle:
            await repl.close()
        await asyncio.gather(*self._closing, return_exceptions=True)
