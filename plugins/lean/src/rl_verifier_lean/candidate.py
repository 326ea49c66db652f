"""Turn a completion's Lean block into the command to check, under a fresh name."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from rl_verifier_lean.lexer import blank
from rl_verifier_lean.statement import Statement

_DECL_KEYWORDS = re.compile(r"(?<![\w.'])(theorem|lemma|example)(?![\w'])")


class Rejected(Exception):
    """The completion fails before Lean runs; ``reason`` is the verdict's reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Candidate:
    mode: str
    code: str  # the candidate command, declaring ``name`` with the trusted statement
    name: str
    audit_name: str

    def audit(self, statement: Statement) -> str:
        """Restate the trusted statement as one closed proposition, prove it by the candidate
        (``@`` makes every binder explicit; binder kinds do not matter to the type check),
        then list the axioms."""
        proposition = statement.as_proposition()
        return (
            f"theorem {self.audit_name} : {proposition} := @{self.name}\n\n"
            f"#print axioms {self.audit_name}\n"
        )


def choose_mode(block: str, mode: str) -> str:
    if mode != "auto":
        return mode
    return "full_file" if _DECL_KEYWORDS.search(blank(block, strings=True)) else "proof"


def fresh_names() -> tuple[str, str]:
    nonce = secrets.token_hex(12)
    return f"rlv_candidate_{nonce}", f"rlv_audit_{nonce}"


def build(statement: Statement, block: str, mode: str) -> Candidate:
    name, audit_name = fresh_names()
    chosen = choose_mode(block, mode)
    if chosen == "proof":
        return Candidate("proof", _proof_mode(statement, block, name), name, audit_name)
    return Candidate("full_file", _full_file(statement, block, name), name, audit_name)


def _proof_mode(statement: Statement, block: str, name: str) -> str:
    proof = block.strip()
    if proof.startswith(":="):
        proof = proof[2:].lstrip()
    return f"{statement.renamed(name)} :=\n{proof}\n"


def strip_header_lines(block: str, header: str) -> str:
    """Drop ``import`` lines and lines repeating the trusted header verbatim."""
    header_lines = {line.strip() for line in header.splitlines() if line.strip()}
    kept = []
    for line in block.splitlines():
        bare = line.strip()
        if bare.startswith("import ") or bare in header_lines:
            continue
        kept.append(line)
    return "\n".join(kept)


def _full_file(statement: Statement, block: str, name: str) -> str:
    """The trusted statement must appear unchanged (comments, strings and whitespace aside);
    its name is replaced by ``name``."""
    text = strip_header_lines(block, statement.header)
    code = blank(text, strings=True)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", code)]
    words = [code[a:b] for a, b in spans]
    # Compare on whitespace-separated words, with ":" and brackets split off so that
    # "(x:Nat)" and "(x : Nat)" normalise alike.
    target = _words(statement.text)
    flat, owner = _flatten(words)
    for start in range(len(flat) - len(target) + 1):
        if flat[start : start + len(target)] != target:
            continue
        after = start + len(target)
        if after < len(flat) and flat[after] != ":=":
            continue  # statement must be followed by its proof
        if owner[start] + 1 >= len(spans):
            break
        keyword_start = spans[owner[start]][0]
        name_start = spans[owner[start] + 1][0]
        if not code.startswith(statement.name, name_start):
            continue
        tail = text[name_start + len(statement.name) :]
        return text[:keyword_start] + "theorem " + name + tail
    raise Rejected("statement_changed", "the trusted statement does not appear unchanged")


_SPLIT_RE = re.compile(r":=|[:()\[\]{}⦃⦄,]|[^:()\[\]{}⦃⦄,]+")


def _words(text: str) -> list[str]:
    return _flatten(blank(text, strings=True).split())[0]


def _flatten(words: list[str]) -> tuple[list[str], list[int]]:
    flat: list[str] = []
    owner: list[int] = []
    for index, word in enumerate(words):
        for piece in _SPLIT_RE.findall(word):
            flat.append("theorem" if piece == "lemma" else piece)
            owner.append(index)
    return flat, owner
