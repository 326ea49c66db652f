"""One Lean REPL process (leanprover-community/repl JSON protocol).

Requests are one JSON object followed by a blank line; responses are (pretty-printed,
possibly multi-line) JSON objects followed by a blank line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import deque
from typing import TYPE_CHECKING, Any

from rl_verifier.executors import drain_lines
from rl_verifier_lean.isolation import LeanProcess, start
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.procs import tree_rss_mb

if TYPE_CHECKING:
    from rl_verifier_sandbox.bwrap import BwrapSandbox


class ReplDied(Exception):
    """The REPL exited, closed its output, or answered something unreadable."""


class Repl:
    def __init__(self, process: LeanProcess) -> None:
        self.process = process
        self.proc = process.proc
        self.uses = 0
        self.envs: dict[str, int] = {}  # header text -> env id
        self.declared: set[str] = set()  # names earlier candidates declared on this REPL
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._drain = asyncio.create_task(self._drain_stderr())

    @classmethod
    async def start(cls, launch: LeanLaunch, sandbox: BwrapSandbox | None, memory_mb: int) -> Repl:
        return cls(await start(launch, sandbox, memory_mb))

    @property
    def isolation(self) -> str:
        return self.process.isolation

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        await drain_lines(self.proc.stderr, self.stderr_tail)

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request, one response. Raises ``ReplDied``; the caller sets deadlines."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n\n")
            await self.proc.stdin.drain()
            lines: list[bytes] = []
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    raise ReplDied(await self.death_report())
                if not lines and not line.startswith(b"{"):
                    continue  # stray output before the JSON answer
                if line.strip():
                    lines.append(line)
                elif lines:
                    break
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ReplDied(f"{type(exc).__name__}; {await self.death_report()}") from None
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise ReplDied(f"unreadable REPL output: {exc}") from None
        try:
            answer = json.loads(b"".join(lines))
        except json.JSONDecodeError as exc:
            raise ReplDied(f"unreadable REPL output: {exc}") from None
        if not isinstance(answer, dict):
            raise ReplDied("REPL answered something other than a JSON object")
        return answer

    def rss_mb(self) -> float:
        """Resident memory of the REPL and every process below it (lake, bwrap, Lean)."""
        return tree_rss_mb(self.proc.pid)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def death_report(self) -> str:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 2)
            await asyncio.wait_for(asyncio.shield(self._drain), 1)
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        tail = " | ".join("".join(self.stderr_tail).strip().splitlines()[-3:])
        memory = " (out of memory)" if "out of memory" in tail.lower() else ""
        return f"Lean REPL died ({how}){memory}" + (f": {tail}" if tail else "")

    async def close(self) -> None:
        self.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.proc.wait(), 5)
        self._drain.cancel()
        await asyncio.to_thread(self.process.release)
