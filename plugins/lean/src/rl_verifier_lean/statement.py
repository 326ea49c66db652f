"""Trusted statements from task references, and the completion's Lean block."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rl_verifier_lean.lexer import blank

DEFAULT_HEADER = "import Mathlib"
_BLOCK_RE = re.compile(r"```[ \t]*lean4?[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_STUB_RE = re.compile(r":=\s*(?:by\b(?:\s*sorry)?|sorry)?\s*$")
_DECL_RE = re.compile(r"^\s*(theorem|lemma)\s+([^\s:({\[]+)")


class BadReference(ValueError):
    """The task's reference does not hold a usable Lean statement."""


@dataclass(frozen=True)
class Statement:
    """``theorem NAME REST`` where REST is ``binders : conclusion``."""

    keyword: str
    name: str
    rest: str
    header: str

    @property
    def text(self) -> str:
        return f"{self.keyword} {self.name} {self.rest}"

    @property
    def scope(self) -> str:
        """The header's ``open`` and ``set_option`` lines, repeated before each command
        in case the REPL does not carry scopes from the header's command."""
        keep = ("open ", "set_option ")
        lines = [line for line in self.header.splitlines() if line.strip().startswith(keep)]
        return "\n".join(lines) + "\n" if lines else ""

    def renamed(self, name: str) -> str:
        return f"theorem {name} {self.rest}"


def parse_reference(reference: dict[str, Any]) -> Statement:
    """Accept ``{"statement", "header"}`` and miniF2F / DeepSeek-Prover / Goedel rows
    (``formal_statement``, ``header``) as they are."""
    raw = reference.get("statement") or reference.get("formal_statement")
    if not isinstance(raw, str) or not raw.strip():
        raise BadReference("the task reference has no 'statement' or 'formal_statement'")
    header = reference.get("header")
    header = header if isinstance(header, str) and header.strip() else DEFAULT_HEADER
    return parse_statement(raw, header)


def parse_statement(raw: str, header: str) -> Statement:
    text = blank(raw, strings=False).strip()
    # Rows often end with ":= by sorry", ":= sorry" or ":= by": cut that proof stub off.
    if stub := _STUB_RE.search(text):
        text = text[: stub.start()]
    match = _DECL_RE.match(text)
    if not match:
        raise BadReference("the statement must start with 'theorem NAME' or 'lemma NAME'")
    rest = " ".join(text[match.end() :].split())
    if ":" not in rest:
        raise BadReference("the statement has no ': conclusion'")
    return Statement("theorem", match.group(2), rest, header)


def last_lean_block(text: str) -> str | None:
    """The last ```lean block (an unterminated final block counts), else None."""
    blocks = _BLOCK_RE.findall(text)
    return blocks[-1] if blocks else None
