"""One Lean REPL process (leanprover-community/repl JSON protocol).

Requests are one JSON object followed by a blank line; responses are (pretty-printed,
possibly multi-line) JSON objects followed by a blank line. Some REPL builds first print
``Processing incremental state [pos: a..b]:`` and then the command's bytes a..b themselves
(``REPL/Main.lean``, ``runCommand``): that echo is skipped by its length, so a line of the
command that looks like JSON is never read as the answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from rl_verifier import PipedProcess
from rl_verifier_lean.isolation import LeanProcess, start
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.procs import tree_rss_mb
from rl_verifier_sandbox import Sandbox

_ECHO = re.compile(rb"^Processing incremental state \[pos: (\d+)\.\.(\d+)\]:\s*$")


class ReplDied(Exception):
    """The REPL exited, closed its output, or answered something unreadable."""


class Repl(PipedProcess):
    noun = "Lean REPL"

    def __init__(self, process: LeanProcess) -> None:
        super().__init__(process.proc, tail_lines=20)
        self.process = process
        self.uses = 0
        self.envs: dict[str, int] = {}  # header text -> env id
        self.declared: set[str] = set()  # names earlier candidates declared on this REPL

    @classmethod
    async def start(cls, launch: LeanLaunch, sandbox: Sandbox | None, memory_mb: int) -> Repl:
        return cls(await start(launch, sandbox, memory_mb))

    @property
    def isolation(self) -> str:
        return self.process.isolation

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request, one response. Raises ``ReplDied``; the caller sets deadlines."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        command = str(request.get("cmd", "")).encode()
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n\n")
            await self.proc.stdin.drain()
            lines: list[bytes] = []
            while True:
                line = await self.readline()
                if not lines and (echo := _ECHO.match(line)):
                    start, end = int(echo.group(1)), int(echo.group(2))
                    for _ in range(command[start:end].count(b"\n") + 1):
                        await self.readline()  # the echoed text, then println's newline
                    continue
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

    async def readline(self) -> bytes:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise ReplDied(await self.death_report())
        return line

    def rss_mb(self) -> float:
        """Resident memory of the REPL and every process below it (lake, bwrap, Lean)."""
        return tree_rss_mb(self.proc.pid)

    async def death_report(self) -> str:
        report = await super().death_report()
        said = "out of memory" in "".join(self.stderr_tail).lower()
        if said or self.process.out_of_memory():
            return report + " (out of memory)"
        return report

    async def close(self) -> None:
        await self.stop()
        await asyncio.to_thread(self.process.release)
