"""Check one candidate in a pooled REPL: header env, trusted statement, candidate, audit.

The statement is elaborated on the header env before any candidate text runs; the candidate
runs on the statement's env; the audit on the candidate's env.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from rl_verifier_lean.candidate import Candidate
from rl_verifier_lean.judge import first_error
from rl_verifier_lean.lexer import code_only
from rl_verifier_lean.pool import ReplPool
from rl_verifier_lean.repl import Repl, ReplDied
from rl_verifier_lean.statement import Statement


class HeaderFailed(Exception):
    """The trusted header does not elaborate: a task or setup fault."""


class StatementFailed(Exception):
    """The trusted statement does not elaborate on the header: a task fault, not the proof's."""


class ProofTimeout(Exception):
    """Lean did not answer within the deadline; the REPL was killed."""


class CandidateTimeout(ProofTimeout):
    """Lean spent the deadline on the answer's own commands (the candidate or its audit): the
    model's failure, scored 0, unlike a trusted statement that does not finish."""


@dataclass(frozen=True)
class Responses:
    candidate: dict[str, Any]
    audit: dict[str, Any]
    earlier_names: frozenset[str] = frozenset()  # declared by earlier proofs on this REPL
    replay: str | None = None  # the kernel replay's report when it disagreed


_KINDS = "theorem|lemma|def|abbrev|instance|opaque|structure|inductive|class|axiom"
_NAME_RE = re.compile(rf"(?<![\w.'])(?:{_KINDS})\s+([^\s:({{\[]+)")


def declared_names(code: str) -> set[str]:
    return set(_NAME_RE.findall(code_only(code)))


async def header_env(repl: Repl, header: str, timeout_s: float) -> int:
    if header in repl.envs:
        return repl.envs[header]
    response = await asyncio.wait_for(repl.send({"cmd": header}), timeout_s)
    if error := first_error(response):
        raise HeaderFailed(f"the header does not elaborate: {error}")
    env = response.get("env")
    if not isinstance(env, int):
        raise ReplDied(f"REPL gave no env for the header: {str(response)[:200]}")
    repl.envs[header] = env
    return env


async def run_checks(
    repl: Repl, statement: Statement, candidate: Candidate, timeouts: tuple[float, float]
) -> Responses:
    header_timeout, proof_timeout = timeouts
    base = await header_env(repl, statement.header, header_timeout)

    async def send(cmd: str, env: int) -> dict[str, Any]:
        return await asyncio.wait_for(repl.send({"cmd": cmd, "env": env}), proof_timeout)

    try:
        trusted = await send(candidate.statement_command(statement), base)
        if error := first_error(trusted):
            raise StatementFailed(f"the trusted statement does not elaborate: {error}")
        stmt_env = trusted.get("env")
        if not isinstance(stmt_env, int):
            raise ReplDied(f"REPL gave no env for the statement: {str(trusted)[:200]}")
    except TimeoutError:
        raise ProofTimeout(f"Lean gave no answer within {proof_timeout}s") from None
    try:
        first = await send(candidate.code, stmt_env)
        env = first.get("env")
        if not isinstance(env, int):
            return Responses(first, {})
        audit = await send(candidate.audit(), env)
    except TimeoutError:
        raise CandidateTimeout(f"Lean spent {proof_timeout}s on the answer") from None
    return Responses(first, audit)


async def check_in_pool(
    pool: ReplPool, statement: Statement, candidate: Candidate, timeouts: tuple[float, float]
) -> Responses:
    """Run on a pooled REPL; a REPL that timed out, died or was cancelled is replaced."""
    repl = await pool.acquire()
    healthy = False
    try:
        result = await run_checks(repl, statement, candidate, timeouts)
        healthy = True
        earlier = frozenset(repl.declared)
        repl.declared |= declared_names(candidate.code) - {f"_root_.{candidate.name}"}
        return Responses(result.candidate, result.audit, earlier)
    except (HeaderFailed, StatementFailed):
        healthy = True
        raise
    finally:
        pool.release(repl, healthy)
