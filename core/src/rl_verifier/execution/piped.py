"""Child processes the engine and plugins hold on to: started in their own session, their
stderr drained into a short tail, killable as a group, able to say how they died."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque


async def drain_lines(stream: asyncio.StreamReader, tail: deque[str]) -> None:
    """Read ``stream`` to its end, keeping its last lines in ``tail`` (for error messages)."""
    while line := await stream.readline():
        tail.append(line.decode(errors="replace"))


class PipedProcess:
    """A child started in its own session, its stderr drained into a short tail: killable
    as a group, and able to say how it died."""

    noun = "process"  # how death reports name it

    def __init__(self, proc: asyncio.subprocess.Process, tail_lines: int = 40) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.stderr_tail: deque[str] = deque(maxlen=tail_lines)
        self._drain = asyncio.create_task(drain_lines(proc.stderr, self.stderr_tail))

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def kill(self) -> None:
        """Kill the process and everything it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def death_report(self) -> str:
        """'<noun> died (exit code N | signal N): <last stderr lines>'."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 2)
            await asyncio.wait_for(asyncio.shield(self._drain), 1)
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        tail = " | ".join("".join(self.stderr_tail).strip().splitlines()[-3:])
        return f"{self.noun} died ({how})" + (f": {tail}" if tail else "")

    async def stop(self) -> None:
        """Kill, reap, and stop draining."""
        self.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.proc.wait(), 5)
        self._drain.cancel()
