"""Check one candidate in a pooled REPL: header env, candidate, audit."""

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


class ProofTimeout(Exception):
    """Lean did not answer within the deadline; the REPL was killed."""


@dataclass(frozen=True)
class Responses:
    candidate: dict[str, Any]
    audit: dict[str, Any]
    earlier_names: frozenset[str] = frozenset()  # declared by earlier proofs on this REPL


_NAME_RE = re.compile(
    r"(?<![\w.'])(?:theorem|lemma|def|abbrev|instance|opaque|structure|inductive)\s+([^\s:({\[]+)"
)


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
    try:
        first = await asyncio.wait_for(
            repl.send({"cmd": candidate.code, "env": base}), proof_timeout
        )
        env = first.get("env")
        if not isinstance(env, int):
            return Responses(first, {})
        audit = await asyncio.wait_for(
            repl.send({"cmd": candidate.audit(statement), "env": env}),
            proof_timeout,
        )
    except TimeoutError:
        raise ProofTimeout(f"Lean gave no answer within {proof_timeout}s") from None
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
        repl.declared |= declared_names(candidate.code) - {candidate.name}
        return Responses(result.candidate, result.audit, earlier)
    except HeaderFailed:
        healthy = True
        raise
    finally:
        pool.release(repl, healthy)
