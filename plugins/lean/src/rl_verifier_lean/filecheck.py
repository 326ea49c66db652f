"""The file backend: fresh `lean --json` processes per proof, statement first, kernel replay.

Without replay, one file: header, the trusted statement's definition, the candidate, the audit.

With replay (the default here), in the spirit of lean4checker:

1. ``RlvStmt.lean`` (header + statement definition) is compiled to ``RlvStmt.olean``;
2. ``RlvCandidate.lean`` imports it, re-runs the header's scope commands (``open``, ...), then the
   candidate and the audit, and is compiled to ``RlvCandidate.olean``;
3. a fresh process of the checker (``leanchecker RlvCandidate``: lean4checker's interface)
   rebuilds the environment of the module's imports and adds every constant of the module
   through the kernel. A constant a metaprogram put in without the kernel fails it, and so
   does an audit checked against a statement the candidate's code rewrote in memory: the
   replay checks it against the statement compiled in step 1.

All steps run in one sandbox (or one temporary directory), one after another, and each step
runs only when the previous one succeeded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rl_verifier_lean.candidate import Candidate
from rl_verifier_lean.isolation import lean_job, spawn_plain
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.repl import ReplDied
from rl_verifier_lean.runner import HeaderFailed, ProofTimeout, Responses, StatementFailed
from rl_verifier_lean.statement import Statement, header_scopes
from rl_verifier_sandbox import Sandbox

JOB = "/job"  # the sandbox's work dir
STATEMENT_MODULE = "RlvStmt"
CANDIDATE_MODULE = "RlvCandidate"
MARK = b"\n@@rlv-step "


class ReplayUnavailable(RuntimeError):
    """The replay checker could not run (not a verdict on the proof)."""


@dataclass(frozen=True)
class FileTools:
    lean: LeanLaunch  # `lean --json` with the project's variables
    checker: list[str] | None = None  # replay checker argv (module appended); None: no replay


@dataclass(frozen=True)
class Section:
    """Lines ``first``..``last`` (1-based, inclusive) of a file and what they hold."""

    name: str  # header, statement, candidate, audit
    first: int
    last: int


@dataclass(frozen=True)
class Source:
    path: str  # file name in the work dir
    text: str
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class Step:
    name: str  # statement, check, replay
    argv: tuple[str, ...]
    source: Source | None = None


@dataclass
class StepResult:
    code: int | None
    out: bytes = b""
    err: bytes = b""
    messages: list[dict[str, Any]] = field(default_factory=list)


def assemble(parts: list[tuple[str, str]]) -> Source:
    """Join named parts with blank lines, remembering each one's lines."""
    text, sections, line = "", [], 1
    for name, part in parts:
        part = part.rstrip("\n") + "\n"
        lines = part.count("\n")
        sections.append(Section(name, line, line + lines - 1))
        text += part + "\n"
        line += lines + 1
    return Source("", text, tuple(sections))


def file_text(statement: Statement, candidate: Candidate) -> str:
    """The single file checked without replay."""
    return single_file(statement, candidate).text


def single_file(statement: Statement, candidate: Candidate) -> Source:
    parts = [
        ("header", statement.header),
        ("statement", candidate.statement_command(statement)),
        ("candidate", candidate.code),
        ("audit", candidate.audit()),
    ]
    return replace(assemble(parts), path="Candidate.lean")


def replay_files(statement: Statement, candidate: Candidate) -> tuple[Source, Source]:
    stmt = assemble(
        [("header", statement.header), ("statement", candidate.statement_command(statement))]
    )
    prelude = f"import {STATEMENT_MODULE}\n{header_scopes(statement.header)}"
    cand = assemble(
        [("header", prelude), ("candidate", candidate.code), ("audit", candidate.audit())]
    )
    return replace(stmt, path=f"{STATEMENT_MODULE}.lean"), replace(
        cand, path=f"{CANDIDATE_MODULE}.lean"
    )


def plan(
    tools: FileTools, statement: Statement, candidate: Candidate, work: str, replay: bool
) -> list[Step]:
    lean = tuple(tools.lean.argv)
    if not replay or tools.checker is None:
        source = single_file(statement, candidate)
        return [Step("check", (*lean, "-R", work, f"{work}/{source.path}"), source)]
    stmt, cand = replay_files(statement, candidate)
    build = f"{work}/build"
    return [
        Step(
            "statement",
            (*lean, "-R", work, "-o", f"{build}/{STATEMENT_MODULE}.olean", f"{work}/{stmt.path}"),
            stmt,
        ),
        Step(
            "check",
            (*lean, "-R", work, "-o", f"{build}/{CANDIDATE_MODULE}.olean", f"{work}/{cand.path}"),
            cand,
        ),
        Step("replay", (*tools.checker, CANDIDATE_MODULE)),
    ]


def parse_json_lines(stdout: str) -> list[dict[str, Any]]:
    found = []
    for line in stdout.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            message = json.loads(line)
            if isinstance(message, dict) and "severity" in message:
                found.append(message)
    return found


async def check_file(
    tools: FileTools,
    sandbox: Sandbox | None,
    statement: Statement,
    candidate: Candidate,
    timeout_s: float,
    memory_mb: int,
    replay: bool = True,
) -> Responses:
    """Check one proof with fresh Lean processes (sandboxed, or plain in a temporary
    directory); all steps share the deadline ``timeout_s``."""
    if sandbox is not None:
        steps = plan(tools, statement, candidate, JOB, replay)
        results = await _run_sandboxed(tools, sandbox, steps, timeout_s, memory_mb)
    else:
        with tempfile.TemporaryDirectory(prefix="rlv-lean-") as work:
            steps = plan(tools, statement, candidate, work, replay)
            results = await _run_plain(tools, steps, work, timeout_s, memory_mb)
    return judge_steps(steps, results)


def judge_steps(steps: list[Step], results: dict[str, StepResult]) -> Responses:
    """Split Lean's messages into the candidate's and the audit's; faults of the header, the
    statement or the tools raise."""
    candidate: dict[str, Any] = {"env": 0, "messages": []}
    audit: dict[str, Any] = {"env": 0, "messages": []}
    replay_problem: str | None = None
    for step in steps:
        result = results.get(step.name)
        if result is None:
            break  # an earlier step failed
        if step.source is None:
            replay_problem = _replay_verdict(result)
            continue
        result.messages = parse_json_lines(result.out.decode(errors="replace"))
        code = result.code
        if code is None or code < 0 or code > 1 or (code and not _errors(result.messages)):
            tail = result.err.decode(errors="replace")[-300:]
            raise ReplDied(f"lean exited with {code}: {tail}")
        for message in result.messages:
            section = _section(step.source, message)
            if message.get("severity") == "error" and section in ("header", "statement"):
                data = str(message.get("data", ""))[:500]
                if section == "header":
                    raise HeaderFailed(f"the header does not elaborate: {data}")
                raise StatementFailed(f"the trusted statement does not elaborate: {data}")
            if section in ("candidate", "audit"):
                (audit if section == "audit" else candidate)["messages"].append(message)
    return Responses(candidate, audit, replay=replay_problem)


def _errors(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("severity") == "error" for m in messages)


def _section(source: Source, message: dict[str, Any]) -> str:
    """The section a message's line falls in (a blank separator line: the one before)."""
    pos = message.get("pos") or {}
    line = pos.get("line", 0) if isinstance(pos, dict) else 0
    found = [section.name for section in source.sections if section.first <= line]
    return found[-1] if found else "header"


def _replay_verdict(result: StepResult) -> str | None:
    """None when the checker accepted every constant; its report when the kernel disagreed;
    ``ReplayUnavailable`` when it could not run at all."""
    if result.code == 0:
        return None
    output = (result.out + result.err).decode(errors="replace")
    if "found a problem" in output or "(kernel)" in output:
        return output.strip()[-1000:]
    raise ReplayUnavailable(f"kernel replay failed to run (exit {result.code}): {output[-300:]}")


# Running the steps ---------------------------------------------------------------------------


def _with_build_dir(launch: LeanLaunch, build: str) -> dict[str, str]:
    path = launch.env.get("LEAN_PATH", os.environ.get("LEAN_PATH", ""))
    return {**launch.env, "LEAN_PATH": f"{path}:{build}" if path else build}


async def _run_plain(
    tools: FileTools, steps: list[Step], work: str, timeout_s: float, memory_mb: int
) -> dict[str, StepResult]:
    Path(work, "build").mkdir()
    deadline = time.monotonic() + timeout_s
    env = _with_build_dir(tools.lean, f"{work}/build")
    results: dict[str, StepResult] = {}
    for step in steps:
        if step.source is not None:
            Path(work, step.source.path).write_text(step.source.text)
        launch = LeanLaunch(list(step.argv[:1]), tools.lean.cwd, env, tools.lean.paths)
        proc = await spawn_plain(launch, memory_mb, *step.argv[1:])
        try:
            remaining = max(deadline - time.monotonic(), 0.01)
            out, err = await asyncio.wait_for(proc.communicate(), remaining)
        except (TimeoutError, asyncio.CancelledError) as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            if isinstance(exc, TimeoutError):
                raise ProofTimeout(f"Lean gave no answer within {timeout_s}s") from None
            raise
        code = proc.returncode
        results[step.name] = StepResult(code, out, err)
        if code != 0:
            break
    return results


# One sandbox job runs every step: `sh` runs them in order and reports each one's exit code and
# output as "@@rlv-step NAME CODE OUT_BYTES ERR_BYTES" followed by those bytes.
DRIVER = r"""
mkdir -p /job/build /job/out || exit 3
export LEAN_PATH="${LEAN_PATH:+$LEAN_PATH:}/job/build"
step() {
  s=$1; shift
  "$@" >"/job/out/$s.out" 2>"/job/out/$s.err"; rc=$?
  echo "$rc" >"/job/out/$s.rc"
  return "$rc"
}
%STEPS%
for s in %NAMES%; do
  [ -f "/job/out/$s.rc" ] || continue
  printf '\n@@rlv-step %s %s %s %s\n' "$s" "$(cat "/job/out/$s.rc")" \
    "$(wc -c <"/job/out/$s.out")" "$(wc -c <"/job/out/$s.err")"
  cat "/job/out/$s.out" "/job/out/$s.err"
done
"""


async def _run_sandboxed(
    tools: FileTools,
    sandbox: Sandbox,
    steps: list[Step],
    timeout_s: float,
    memory_mb: int,
) -> dict[str, StepResult]:
    python = any(step.argv[0] == "python" for step in steps)
    lines = []
    for step in steps:
        argv = [sandbox.python_executable if a == "python" else a for a in step.argv]
        lines.append("step " + " ".join(shlex.quote(a) for a in [step.name, *argv]))
    script = DRIVER.replace("%STEPS%", " &&\n".join(lines)).replace(
        "%NAMES%", " ".join(step.name for step in steps)
    )
    checker = [a for a in (tools.checker or []) if os.path.isabs(a) and os.path.exists(a)]
    paths = list(tools.lean.paths) + checker
    driver = LeanLaunch(["/bin/sh", "-c", script], tools.lean.cwd, tools.lean.env, paths)
    files = {step.source.path: step.source.text for step in steps if step.source is not None}
    job = lean_job(driver, sandbox, memory_mb, files=files, wall_s=timeout_s, python=python)
    result = await sandbox.arun(job)
    if result.timed_out:
        raise ProofTimeout(f"Lean gave no answer within {timeout_s}s")
    if result.exit_code is None or MARK not in b"\n" + result.stdout:
        tail = result.stderr.decode(errors="replace")[-300:]
        raise ReplDied(f"the Lean job failed (exit {result.exit_code}): {tail}")
    return parse_report(b"\n" + result.stdout)


def parse_report(stdout: bytes) -> dict[str, StepResult]:
    results: dict[str, StepResult] = {}
    pos = stdout.find(MARK)
    while pos >= 0:
        end = stdout.index(b"\n", pos + len(MARK))
        name, code, n_out, n_err = stdout[pos + len(MARK) : end].decode().split()
        start = end + 1
        out = stdout[start : start + int(n_out)]
        err = stdout[start + int(n_out) : start + int(n_out) + int(n_err)]
        results[name] = StepResult(int(code), out, err)
        pos = stdout.find(MARK, start + int(n_out) + int(n_err))
    return results
