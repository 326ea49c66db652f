"""The simple backend: one `lake env lean --json FILE` process per proof."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import tempfile
from pathlib import Path
from typing import Any

from rl_verifier_lean.candidate import Candidate
from rl_verifier_lean.repl import ReplDied
from rl_verifier_lean.runner import ProofTimeout, Responses
from rl_verifier_lean.statement import Statement


def file_text(statement: Statement, candidate: Candidate) -> str:
    return f"{statement.header}\n\n{candidate.code}\n\n{candidate.audit(statement)}"


def parse_json_lines(stdout: str) -> list[dict[str, Any]]:
    found = []
    for line in stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            message = json.loads(line)
            if isinstance(message, dict) and "severity" in message:
                found.append(message)
    return found


async def check_file(
    argv: list[str],
    cwd: str,
    statement: Statement,
    candidate: Candidate,
    timeout_s: float,
    memory_mb: int,
) -> Responses:
    limit = memory_mb * 1024 * 1024

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory(prefix="rlv-lean-") as tmp:
        path = Path(tmp) / "Candidate.lean"
        path.write_text(file_text(statement, candidate))
        proc = await asyncio.create_subprocess_exec(
            *argv,
            str(path),
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=limits,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except (TimeoutError, asyncio.CancelledError) as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise ProofTimeout(f"Lean gave no answer within {timeout_s}s") from None
            raise
    messages = parse_json_lines(out.decode(errors="replace"))
    if (proc.returncode and proc.returncode < 0) or (proc.returncode and not messages):
        raise ReplDied(f"lean exited with {proc.returncode}: {err.decode(errors='replace')[-300:]}")
    response = {"env": 0, "messages": messages}
    return Responses(response, response)
