"""Static screen, two layers over Lean-lexed text (see ``lexer``).

1. Allow-list (``allowed``): every command keyword must be an allowed command kind, every
   attribute an allowed attribute; ``open`` may not open a namespace the candidate itself
   declares into; scopes must be closed; the trusted theorem appears once and does not recurse
   (``termination_by``/``decreasing_by``); ``rlv_`` names are reserved; text Lean would lex
   differently from the screen (unterminated or ambiguous literals) is rejected.
2. Deny-list (``first_banned``): banned tokens anywhere in the code, kept as a second layer.

A command keyword the screen does not know (a library can declare new commands) is not seen
as a command; the statement-first audit and, with the file backend, kernel replay still apply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rl_verifier_lean.lexer import Lexed, code_only, lex

DEFAULT_BANNED: tuple[str, ...] = (
    "sorry", "admit", "sorryAx", "native_decide", "ofReduceBool", "ofReduceNat",
    "trustCompiler", "axiom", "implemented_by", "extern", "csimp", "unsafe", "partial",
    "#exit", "#eval", "#print", "run_tac", "run_cmd", "run_elab", "run_meta", "elab",
    "elab_rules", "macro", "macro_rules", "syntax", "notation", "infix", "infixl", "infixr",
    "prefix", "postfix", "local instance", "initialize", "builtin_initialize", "open private",
    "set_option", "import", "apply?", "exact?", "command_elab", "commandElab", "term_elab",
    "termElab", "tactic_elab", "modifyEnv", "addDecl", "setEnv", "skipKernelTC", "deriving",
    "export", "attribute", "by_elab", "eval%",
)  # fmt: skip

DEFAULT_ALLOWED_COMMANDS: tuple[str, ...] = (
    "theorem", "lemma", "def", "abbrev", "example", "structure", "inductive", "namespace",
    "section", "end", "open", "variable", "universe", "mutual", "noncomputable", "private",
    "protected",
)  # fmt: skip

DEFAULT_ALLOWED_ATTRIBUTES: tuple[str, ...] = (
    "simp", "reducible", "irreducible", "semireducible", "norm_cast", "ext", "elab_as_elim",
)  # fmt: skip

# Keywords that start (or modify) a command: Lean core and Mathlib. `#...` tokens are commands too.
COMMAND_KEYWORDS = frozenset((
    "theorem", "lemma", "def", "abbrev", "example", "instance", "structure", "class",
    "inductive", "coinductive", "axiom", "opaque", "namespace", "section", "end", "open",
    "export", "variable", "universe", "attribute", "set_option", "notation", "infix", "infixl",
    "infixr", "prefix", "postfix", "macro", "macro_rules", "syntax", "elab", "elab_rules",
    "declare_syntax_cat", "initialize", "builtin_initialize", "deriving", "mutual", "include",
    "omit", "import", "run_cmd", "run_meta", "run_elab", "add_decl_doc", "register_simp_attr",
    "register_option", "register_builtin_option", "simproc", "dsimproc", "builtin_simproc",
    "builtin_dsimproc", "simproc_decl", "grind_pattern", "declare_simp_like_tactic",
    "register_tactic_tag", "tactic_extension", "recommended_spelling", "seal", "unseal",
    "partial", "unsafe", "local", "scoped", "nonrec", "noncomputable", "private", "protected",
    "irreducible_def", "alias", "notation3", "assert_not_exists", "assert_not_imported",
    "initialize_simps_projections", "proof_wanted", "library_note", "compile_inductive",
    "compile_def", "suppress_compilation",
))  # fmt: skip
DECLARATIONS = frozenset((
    "theorem", "lemma", "def", "abbrev", "example", "instance", "structure", "class",
    "inductive", "opaque", "axiom",
))  # fmt: skip
RECURSION = frozenset({"termination_by", "decreasing_by"})
# Namespaces, sections and mutual blocks open at once: deeper is not allowed (every `open` and
# declaration copies the namespace path, so unbounded nesting made the screen cubic).
MAX_SCOPE_DEPTH = 32
_Tree = dict[str, "_Tree"]  # declared names by component: {"A": {"B": {}}} for A.B
_WORD = r"[A-Za-z0-9_'!?\u00c0-\uffff]"


@dataclass(frozen=True)
class Rules:
    allowed_commands: frozenset[str]
    allowed_attributes: frozenset[str]

    @classmethod
    def of(cls, commands: Iterable[str], attributes: Iterable[str]) -> Rules:
        return cls(frozenset(commands), frozenset(attributes))


DEFAULT_RULES = Rules.of(DEFAULT_ALLOWED_COMMANDS, DEFAULT_ALLOWED_ATTRIBUTES)


# Deny-list --------------------------------------------------------------------------------


def _pattern(token: str) -> re.Pattern[str]:
    """Whole-token match; a dotted name counts when any component matches
    (``Lean.ofReduceBool``), multi-word entries allow any whitespace between words, and a
    trailing ``!``/``?`` does not hide a token (``#eval!``)."""
    parts = [re.escape(p) for p in token.split()]
    body = r"\s+".join(parts)
    return re.compile(rf"(?<!{_WORD}){body}[!?]*(?!{_WORD})")


def first_banned(text: str, banned: Sequence[str]) -> str | None:
    """The first banned token (in list order) found in ``text``'s code, or None. Code inside
    interpolated strings' braces counts as code."""
    code = code_only(text)
    for token in banned:
        if _pattern(token).search(code):
            return token
    return None


# Allow-list -------------------------------------------------------------------------------


def allowed(
    text: str, mode: str, rules: Rules = DEFAULT_RULES, trusted_name: str | None = None
) -> str | None:
    """None when ``text`` (a proof, or a whole file in full_file mode) uses only allowed
    command kinds; otherwise what is not allowed (the verdict's ``not_allowed:<what>``)."""
    lexed = lex(text)
    if lexed.problems:
        return f"lexing ({lexed.problems[0]})"
    try:
        _Walk(lexed, mode, rules, trusted_name).run()
    except _NotAllowed as exc:
        return str(exc)
    return None


class _NotAllowed(Exception):
    pass


class _Walk:
    """One pass over the tokens, keeping the scopes, declarations and ``open``s seen."""

    def __init__(self, lexed: Lexed, mode: str, rules: Rules, trusted: str | None) -> None:
        self.toks = lexed.tokens
        self.proof = mode == "proof"
        self.rules = rules
        self.trusted = trusted
        self.scopes: list[tuple[str, str]] = []  # (kind, name) of open namespaces/sections
        self.declared: list[str] = []  # full names the text declares
        self.written: list[str] = []  # names as written (trusted-name duplicates)
        self.opens: list[tuple[list[str], list[str]]] = []  # (namespace stack, opened names)
        self.current: str | None = None  # the declaration being walked (written name)

    def namespace(self) -> list[str]:
        return [name for kind, name in self.scopes if kind == "namespace" and name]

    def run(self) -> None:
        for tok in self.toks:
            parts = tok.text.split(".") if tok.kind in ("ident", "name") else []
            if any(part.startswith("rlv_") for part in parts):
                raise _NotAllowed("reserved name")
        i = 0
        while i < len(self.toks):
            tok = self.toks[i]
            if tok.kind == "command":
                raise _NotAllowed(tok.text.rstrip("!?"))
            if tok.kind == "symbol" and tok.text == "@[":
                i = self.attributes(i)
            elif tok.kind == "ident" and tok.text in RECURSION and self.in_trusted():
                raise _NotAllowed(tok.text)
            elif tok.kind != "ident" or tok.text not in COMMAND_KEYWORDS:
                i += 1
            elif tok.text == "open":
                i = self.open(i)
            elif self.proof or tok.text not in self.rules.allowed_commands:
                raise _NotAllowed(tok.text)
            else:
                i = self.command(i)
        self.finish()

    def in_trusted(self) -> bool:
        return self.proof or (self.trusted is not None and self.current == self.trusted)

    def attributes(self, i: int) -> int:
        """``@[a, b x, local c]``: every attribute name must be allowed."""
        depth, expect_name, j = 0, True, i + 1
        while j < len(self.toks):
            tok = self.toks[j]
            if tok.text in ("[", "(", "{", "@["):
                depth += 1
            elif tok.text in ("]", ")", "}"):
                if depth == 0:
                    return j + 1
                depth -= 1
            elif tok.text == "," and depth == 0:
                expect_name = True
            elif expect_name and tok.text not in ("local", "scoped"):
                expect_name = False
                if self.proof or tok.text not in self.rules.allowed_attributes:
                    raise _NotAllowed(f"@[{tok.text}]")
            j += 1
        raise _NotAllowed("@[")

    def open(self, i: int) -> int:
        """``open [scoped] A B ...``: remembered, checked once every declaration is known."""
        j = i + 1
        if j < len(self.toks) and self.toks[j].text == "scoped":
            j += 1
        names = []
        while j < len(self.toks) and self.toks[j].kind == "ident":
            word = self.toks[j].text
            if word in COMMAND_KEYWORDS or word in ("in", "hiding", "renaming"):
                break
            names.append(word)
            j += 1
        self.opens.append((self.namespace(), names))
        return j

    def command(self, i: int) -> int:
        word = self.toks[i].text
        nxt = self.toks[i + 1] if i + 1 < len(self.toks) else None
        named = nxt is not None and nxt.kind == "ident" and nxt.text not in COMMAND_KEYWORDS
        name = nxt.text if nxt is not None and named else ""
        if word in ("namespace", "section", "mutual") and len(self.scopes) >= MAX_SCOPE_DEPTH:
            raise _NotAllowed(f"scopes nested deeper than {MAX_SCOPE_DEPTH}")
        if word in ("namespace", "section"):
            self.scopes.append((word, name))
            self.current = None
            return i + (2 if name else 1)
        if word == "end":
            if not self.scopes:
                raise _NotAllowed("end")
            self.current = None
            _, opened = self.scopes.pop()
            return i + (2 if name and name == opened else 1)
        if word == "mutual":
            self.scopes.append(("mutual", ""))
        elif word in DECLARATIONS:
            self.current = None
            if name:
                self.declare(name)
                return i + 2
        return i + 1

    def declare(self, written: str) -> None:
        self.current = written
        self.written.append(written)
        if written.startswith("_root_."):
            full = written[len("_root_.") :]
        else:
            full = ".".join([*self.namespace(), written])
        self.declared.append(full)

    def finish(self) -> None:
        if self.scopes:
            kind, name = self.scopes[-1]
            raise _NotAllowed(f"unclosed {kind} {name}".strip())
        if self.trusted is not None and self.written.count(self.trusted) > 1:
            raise _NotAllowed("duplicate")
        # `open N` inside namespaces A.B may not name a namespace the text declares into:
        # A.B.N, A.N or N a prefix of a declared name. Declared names go into a tree of their
        # components (linear in their length: a set of every dotted prefix was quadratic).
        created: _Tree = {}
        for name in self.declared:
            _insert(created, name.split("."))
        for stack, names in self.opens:
            roots = [created]  # the tree below each prefix of the namespace path
            for entry in stack:
                node = _find(roots[-1], entry.split("."))
                if node is None:
                    break
                roots.append(node)
            for name in names:
                if any(_find(root, name.split(".")) is not None for root in roots):
                    raise _NotAllowed(f"open {name}")


def _insert(tree: _Tree, parts: list[str]) -> None:
    for part in parts:
        tree = tree.setdefault(part, {})


def _find(tree: _Tree, parts: list[str]) -> _Tree | None:
    """The subtree at ``parts``: ``parts`` is a prefix of a name in ``tree``."""
    node: _Tree | None = tree
    for part in parts:
        node = node.get(part) if node is not None else None
        if node is None:
            return None
    return node
