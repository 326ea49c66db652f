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

    def as_proposition(self) -> str:
        """The statement as one closed type: ``∀ binders, conclusion`` (or the conclusion)."""
        binders, conclusion = split_signature(self.rest)
        return f"∀ {binders}, {conclusion}" if binders else conclusion

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
    split_signature(rest)  # raises BadReference without a conclusion
    return Statement("theorem", match.group(2), rest, header)


_OPEN = {"(": ")", "[": "]", "{": "}", "⦃": "⦄"}


def split_signature(rest: str) -> tuple[str, str]:
    """``binders : conclusion`` split at the first colon outside brackets and strings."""
    depth, in_string, index = 0, False, 0
    while index < len(rest):
        char = rest[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _OPEN:
            depth += 1
        elif char in _OPEN.values():
            depth -= 1
        elif char == ":" and depth == 0 and not rest.startswith(":=", index):
            return rest[:index].strip(), rest[index + 1 :].strip()
        index += 1
    raise BadReference("the statement has no ': conclusion' outside brackets")


# Header commands that only set the scope (no declarations): a module importing the header's
# compiled statement re-runs these to see the statement's names the way the header does.
_SCOPE_HEADS = (
    "open", "set_option", "universe", "variable", "namespace", "section", "end", "include",
    "omit", "noncomputable section", "local ", "attribute [local ",
)  # fmt: skip


def header_scopes(header: str) -> str:
    """The header's scope-setting commands (``open``, ``set_option``, ``namespace``, ...), in
    order; a command is a line starting at column 0 plus its indented continuation lines.
    Comments are dropped."""
    kept: list[str] = []
    keep = False
    for line in blank(header, strings=False).splitlines():
        if line[:1].strip():  # `open X in` / `set_option o v in` belong to the next command
            keep = line.startswith(_SCOPE_HEADS) and not line.rstrip().endswith(" in")
        if keep and line.strip():
            kept.append(line.rstrip())
    return "\n".join(kept)


def last_lean_block(text: str) -> str | None:
    """The last ```lean block (an unterminated final block counts), else None."""
    blocks = _BLOCK_RE.findall(text)
    return blocks[-1] if blocks else None
