"""The simple backend: one Lean process per proof (`lean --json FILE`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier_lean.candidate import Candidate
from rl_verifier_lean.isolation import lean_job, spawn_plain
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.repl import ReplDied
from rl_verifier_lean.runner import ProofTimeout, Responses
from rl_verifier_lean.statement import Statement

if TYPE_CHECKING:
    from rl_verifier_sandbox.bwrap import BwrapSandbox


FILE = "/job/Candidate.lean"  # where the sandbox puts the proof (its work dir is /job)


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
    launch: LeanLaunch,
    sandbox: BwrapSandbox | None,
    statement: Statement,
    candidate: Candidate,
    timeout_s: float,
    memory_mb: int,
) -> Responses:
    """Check one proof with one Lean process: sandboxed (`lean --json FILE` with the project's
    variables) or plain (`lake env lean --json FILE`)."""
    text = file_text(statement, candidate)
    if sandbox is None:
        code, out, err = await _run_plain(launch, text, timeout_s, memory_mb)
    else:
        files = {"Candidate.lean": text}
        job = lean_job(
            launch, sandbox, memory_mb, extra_args=(FILE,), files=files, wall_s=timeout_s
        )
        result = await sandbox.arun(job)
        if result.timed_out:
            raise ProofTimeout(f"Lean gave no answer within {timeout_s}s")
        code = result.exit_code if result.signal is None else -result.signal
        out, err = result.stdout, result.stderr
    messages = parse_json_lines(out.decode(errors="replace"))
    if (code is not None and code < 0) or (code and not messages):
        raise ReplDied(f"lean exited with {code}: {err.decode(errors='replace')[-300:]}")
    response = {"env": 0, "messages": messages}
    return Responses(response, response)


async def _run_plain(
    launch: LeanLaunch, text: str, timeout_s: float, memory_mb: int
) -> tuple[int | None, bytes, bytes]:
    with tempfile.TemporaryDirectory(prefix="rlv-lean-") as tmp:
        path = Path(tmp) / "Candidate.lean"
        path.write_text(text)
        proc = await spawn_plain(launch, memory_mb, str(path))
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except (TimeoutError, asyncio.CancelledError) as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise ProofTimeout(f"Lean gave no answer within {timeout_s}s") from None
            raise
    return proc.returncode, out, err
