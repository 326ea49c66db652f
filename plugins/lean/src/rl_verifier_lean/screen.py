"""Static screen: reject banned tokens in comment- and string-stripped Lean text."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rl_verifier_lean.lexer import code_only

DEFAULT_BANNED: tuple[str, ...] = (
    "sorry", "admit", "sorryAx", "native_decide", "ofReduceBool", "ofReduceNat",
    "trustCompiler", "axiom", "implemented_by", "extern", "csimp", "unsafe", "partial",
    "#exit", "#eval", "#print", "run_tac", "run_cmd", "run_elab", "elab", "macro",
    "macro_rules", "syntax", "notation", "infix", "infixl", "infixr", "prefix", "postfix",
    "local instance", "initialize", "open private", "set_option", "import", "apply?",
    "exact?",
)  # fmt: skip

_WORD = r"[A-Za-z0-9_'!?\u00c0-\uffff]"


def _pattern(token: str) -> re.Pattern[str]:
    """Whole-token match; a dotted name counts when any component matches
    (``Lean.ofReduceBool``), multi-word entries allow any whitespace between words."""
    parts = [re.escape(p) for p in token.split()]
    body = r"\s+".join(parts)
    # The token must not be glued to other identifier characters. '.' separates
    # components, so `Lean.ofReduceBool` and `Tactic.sorry` still match.
    return re.compile(rf"(?<!{_WORD}){body}(?!{_WORD})")


def first_banned(text: str, banned: Sequence[str]) -> str | None:
    """The first banned token (in list order) found in ``text``'s code, or None."""
    code = code_only(text)
    for token in banned:
        if _pattern(token).search(code):
            return token
    return None
