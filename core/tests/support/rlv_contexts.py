"""Where trainers call reward functions: on a worker thread, or inside a running event
loop that must keep running while a check is scored."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
TICK_S = 0.02


def on_thread(func: Callable[[], T]) -> T:
    """``func()`` on a new (non-main) thread; its result, or its exception re-raised."""

    def run() -> T:
        assert threading.current_thread() is not threading.main_thread()
        return func()

    with ThreadPoolExecutor(1, thread_name_prefix="trainer-worker") as pool:
        return pool.submit(run).result()


def in_running_loop(make: Callable[[], Coroutine[Any, Any, T]]) -> tuple[T, int]:
    """Await ``make()`` inside a running event loop beside a ticker; the result and the
    ticks the loop made meanwhile (few ticks: the coroutine blocked the loop)."""

    async def main() -> tuple[T, int]:
        ticks = 0
        done = asyncio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(TICK_S)
                ticks += 1

        ticker = asyncio.create_task(tick())
        try:
            result = await make()
        finally:
            done.set()
            await ticker
        return result, ticks

    return asyncio.run(main())
