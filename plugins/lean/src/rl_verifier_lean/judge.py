"""Read Lean's answers: errors, sorries, the axiom audit. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

SORRY_WARNINGS = ("declaration uses 'sorry'", "declaration uses `sorry`")
# Never a proof, whatever `allowed_axioms` says: sorry, and trusting compiled code.
NEVER_AXIOMS = frozenset({"sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler"})
_AXIOMS_RE = re.compile(r"^'?(?P<name>[^'\s]+)'? depends on axioms: \[(?P<axioms>.*)\]\s*$", re.S)
_NO_AXIOMS_RE = re.compile(r"^'?(?P<name>[^'\s]+)'? does not depend on any axioms\s*$")


@dataclass(frozen=True)
class Judgement:
    passed: bool
    reason: str | None = None
    detail: str = ""
    axioms: list[str] = field(default_factory=list)


def messages(response: dict[str, Any]) -> list[dict[str, Any]]:
    found = response.get("messages") or []
    return [m for m in found if isinstance(m, dict)]


def first_error(response: dict[str, Any]) -> str | None:
    if "message" in response and "env" not in response:
        return str(response["message"])  # e.g. "Unknown environment."
    for message in messages(response):
        if message.get("severity") == "error":
            return _describe(message)
    return None


def has_sorry(response: dict[str, Any]) -> bool:
    if response.get("sorries"):
        return True
    return any(any(w in str(m.get("data", "")) for w in SORRY_WARNINGS) for m in messages(response))


def audit_axioms(response: dict[str, Any], name: str) -> list[list[str]]:
    """The axiom lists reported for ``name`` (one per audit message found)."""
    found: list[list[str]] = []
    for message in messages(response):
        data = str(message.get("data", "")).strip()
        if m := _AXIOMS_RE.match(data):
            if m.group("name") == name:
                found.append([a.strip() for a in m.group("axioms").split(",") if a.strip()])
        elif (m := _NO_AXIOMS_RE.match(data)) and m.group("name") == name:
            found.append([])
    return found


def judge(
    candidate: dict[str, Any],
    audit: dict[str, Any],
    audit_name: str,
    allowed_axioms: Iterable[str],
    declared: Iterable[str] = (),
) -> Judgement:
    """Pass only with no errors, no sorry, one audit message and allowed axioms only (never
    ``NEVER_AXIOMS``, never an axiom named like something the answer declares). An error in
    the audit alone means the candidate's theorem is not a proof of the statement elaborated
    first: ``statement_changed``."""
    for response, reason in ((candidate, "lean_error"), (audit, "statement_changed")):
        if error := first_error(response):
            if error.startswith("Unknown environment"):
                return Judgement(False, "isolation", error)
            return Judgement(False, reason, error)
    for response in (candidate, audit):
        if has_sorry(response):
            return Judgement(False, "sorry", "the proof uses sorry")
    reports = audit_axioms(audit, audit_name)
    if len(reports) != 1:
        return Judgement(False, "isolation", f"{len(reports)} axiom audit messages, expected 1")
    axioms = reports[0]
    own = {name.rsplit(".", 1)[-1] for name in declared}
    allowed = set(allowed_axioms) - NEVER_AXIOMS
    extra = sorted(a for a in axioms if a not in allowed or a.rsplit(".", 1)[-1] in own)
    if "sorryAx" in extra:
        return Judgement(False, "sorry", "the proof depends on sorryAx", axioms)
    if extra:
        return Judgement(False, "axiom", "disallowed axioms: " + ", ".join(extra), axioms)
    return Judgement(True, None, "", axioms)


def _describe(message: dict[str, Any]) -> str:
    pos = message.get("pos") or {}
    where = f"{pos.get('line', '?')}:{pos.get('column', '?')}" if isinstance(pos, dict) else "?"
    return f"{where}: {str(message.get('data', ''))[:500]}"


def summarise(responses: Sequence[dict[str, Any]]) -> list[str]:
    """Short message list for the verdict's info."""
    out = []
    for response in responses:
        for message in messages(response)[:10]:
            out.append(f"{message.get('severity', '?')} {_describe(message)}"[:300])
    return out
