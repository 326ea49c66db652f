"""Turn a completion's Lean block into the commands to check, under fresh names.

Statement first: ``statement_command`` elaborates the trusted statement as
``def rlv_stmt_<nonce> : Prop := ∀ binders, conclusion`` on the header environment, before any
candidate text; the candidate runs on top of that; ``audit`` then checks
``theorem rlv_audit_<nonce> : rlv_stmt_<nonce> := @rlv_candidate_<nonce>`` and prints its axioms.
Whatever the candidate adds (instances, attributes, namespaces, coercions, simp lemmas) can
change what its own restatement means, not what ``rlv_stmt_<nonce>`` means: a changed meaning
is a type mismatch in the audit. Every name is written ``_root_.X``, so a namespace the
candidate leaves open changes neither where they are declared nor what they resolve to.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from rl_verifier_lean.lexer import blank, tokens
from rl_verifier_lean.statement import Statement


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
    statement_name: str

    def statement_command(self, statement: Statement) -> str:
        """The trusted statement as one closed proposition (hypotheses, implicit and instance
        binders included), elaborated on the header environment alone."""
        return f"def _root_.{self.statement_name} : Prop :=\n  {statement.as_proposition()}\n"

    def audit(self) -> str:
        """The candidate proves the statement elaborated first (``@`` makes every binder
        explicit; binder kinds do not matter to the type check); then list the axioms."""
        return (
            f"theorem _root_.{self.audit_name} : _root_.{self.statement_name} :=\n"
            f"  @_root_.{self.name}\n\n#print axioms _root_.{self.audit_name}\n"
        )

    @property
    def names(self) -> tuple[str, str, str]:
        return self.name, self.audit_name, self.statement_name


def choose_mode(block: str, mode: str) -> str:
    if mode != "auto":
        return mode
    keywords = {"theorem", "lemma", "example"}
    found = any(t.kind == "ident" and t.text in keywords for t in tokens(block))
    return "full_file" if found else "proof"


def fresh_names() -> tuple[str, str, str]:
    nonce = secrets.token_hex(12)
    return f"rlv_candidate_{nonce}", f"rlv_audit_{nonce}", f"rlv_stmt_{nonce}"


def build(statement: Statement, block: str, mode: str) -> Candidate:
    name, audit_name, statement_name = fresh_names()
    chosen = choose_mode(block, mode)
    if chosen == "proof":
        code = _proof_mode(statement, block, name)
    else:
        code = _full_file(statement, block, name)
    return Candidate(chosen, code, name, audit_name, statement_name)


def _proof_mode(statement: Statement, block: str, name: str) -> str:
    proof = block.strip()
    if proof.startswith(":="):
        proof = proof[2:].lstrip()
    return f"{statement.renamed('_root_.' + name)} :=\n{proof}\n"


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
        return text[:keyword_start] + "theorem _root_." + name + tail
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
