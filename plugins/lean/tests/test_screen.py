"""Static screen and lexing: Lean's lexical rules, the allow-list and the deny-list."""

from __future__ import annotations

import pytest

from rl_verifier_lean.candidate import Rejected
from rl_verifier_lean.lexer import blank, code_only, lex, normalise
from rl_verifier_lean.screen import DEFAULT_BANNED, first_banned
from rl_verifier_lean.statement import parse_statement
from rl_verifier_lean.verifier import LeanVerifier


def test_comments_and_strings_are_blanked() -> None:
    text = 'a -- sorry\nb /- x /- nested sorry -/ y -/ c "str \\" sorry" d'
    code = code_only(text)
    assert len(code) == len(text)
    assert "sorry" not in code
    assert normalise(text) == "a b c d"


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("by sorry", "sorry"),
        ("by\n  admit", "admit"),
        ("exact sorryAx _ false", "sorryAx"),
        ("by native_decide", "native_decide"),
        ("exact Lean.ofReduceBool _ _ rfl", "ofReduceBool"),
        ("@[implemented_by foo] def f := 1", "implemented_by"),
        ('@[extern "c_f"] opaque f : Nat', "extern"),
        ("@[csimp] theorem x : a = b := rfl", "csimp"),
        ("unsafe def f := 1", "unsafe"),
        ("partial def f := 1", "partial"),
        ("open private foo in rfl", "open private"),
        ("local  instance : Add Nat := ⟨fun _ _ => 3⟩", "local instance"),
        ("macro_rules | `(tactic| trivial) => `(tactic| rfl)", "macro_rules"),
        ('notation "one" => 2', "notation"),
        ('infixl:65 " +\' " => HAdd.hAdd', "infixl"),
        ("#exit", "#exit"),
        ('#eval IO.println "ok"', "#eval"),
        ("set_option debug.skipKernelTC true in", "set_option"),
        ("run_tac do pure ()", "run_tac"),
        ('elab "x" : tactic => pure ()', "elab"),
        ("axiom cheat : False", "axiom"),
        ("by exact?", "exact?"),
        ("by apply?", "apply?"),
        ("import Mathlib.Tactic", "import"),
    ],
)
def test_banned_tokens(text: str, token: str) -> None:
    assert first_banned(text, DEFAULT_BANNED) == token


@pytest.mark.parametrize(
    "text",
    [
        "by simp -- sorry",
        'by exact "sorry".length_pos',
        "by exact partial_sum_le h",
        "by exact my_axiom_free h",
        "by apply le_refl",
        "by exact h'",
        "/- #eval 1 -/ by rfl",
    ],
)
def test_clean_text_passes(text: str) -> None:
    assert first_banned(text, DEFAULT_BANNED) is None


# Lean's lexical rules (see rl_verifier_lean.lexer): what is code, and what is not.
LEXICAL: list[tuple[str, str, list[str]]] = [
    # (form, text, the code tokens Lean sees)
    ("raw string with a quote", 'r#"a " -- b"# x', ["x"]),
    ("raw string: backslash is no escape", 'r"\\" x', ["x"]),
    ("raw string with more hashes", 'r##"a "# b"## x', ["x"]),
    ("interpolation holds code", 's!"a {f x} b" y', ["s!", "f", "x", "y"]),
    ("escaped brace is text", 's!"\\{x}" y', ["s!", "y"]),
    (
        "nested braces in interpolation",
        's!"{ {a := 1}.a }" y',
        ["s!", "{", "a", ":=", "1", "}", ".", "a", "y"],
    ),
    ("plain string, balanced braces read as code", '"a {b} c" x', ["b", "x"]),
    ("plain string without braces", '"a -- b /- c" x', ["x"]),
    ("quoted identifier", "«x--» y", ["x--", "y"]),
    ("dotted quoted identifier", "Foo.«a b».c d", ["Foo.a b.c", "d"]),
    ("char literal quote", "'\"' x", ["x"]),
    ("char literal after a numeral", "f 2'\"' x", ["f", "2", "x"]),
    ("char escapes", "'\\'' '\\\\' '\\x41' '\\u0041' x", ["x"]),
    ("prime is part of a name", "h' x", ["h'", "x"]),
    ("nested block comments", "/- a /- b -/ c -/ x", ["x"]),
    ("doc comment opens with three characters", "/--/ x -/ y", ["y"]),
    ("line comment inside a block comment", "/- -- -/ x", ["x"]),
    ("block opener inside a line comment", "-- /-\nx", ["x"]),
    ("bang and question mark in names", "#eval! get! x?", ["#eval!", "get!", "x?"]),
    ("letter-like symbols are identifiers", "ℕ → α₁", ["ℕ", "→", "α₁"]),
]


@pytest.mark.parametrize(("form", "text", "code"), LEXICAL, ids=[row[0] for row in LEXICAL])
def test_lexer_follows_lean(form: str, text: str, code: list[str]) -> None:
    lexed = lex(text)
    assert not lexed.problems, (form, lexed.problems)
    assert [t.text for t in lexed.tokens] == code, form
    assert len(blank(text, strings=True)) == len(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("/- never closed", "unterminated comment"),
        ('"never closed', "unterminated string"),
        ('r#"never closed"', "unterminated raw string"),
        ("«never closed", "unterminated «quoted identifier»"),
        ('f "{" x -- "}"', "string read differently with and without interpolation"),
        ('throwError "a {" x -- "}"', "string read differently with and without interpolation"),
        ('"a { b" x', "string read differently with and without interpolation"),
        ("'ab'", "malformed char literal"),
    ],
)
def test_lexer_reports_what_lean_might_read_otherwise(text: str, problem: str) -> None:
    assert problem in lex(text).problems


# The screen as the verifier runs it: deny-list, statement check, allow-list. Every form of
# issue 16 section 2, each hiding something the screen must see (or honest text it must pass).
T = "theorem my_thm (n : ℕ) : n + 0 = n"
THM = T + " := by simp"
INSTANCE = "instance : Add ℕ := ⟨fun a _ => a⟩"
TABLE: list[tuple[str, str, str, str | None]] = [
    # (form, answer, mode, reason or None for accepted)
    ("#eval!", THM + "\n#eval! forge", "auto", "banned:#eval"),
    ("run_meta", "run_meta pure ()\n" + THM, "auto", "banned:run_meta"),
    (
        "elab_rules",
        "elab_rules : tactic | `(tactic| trivial) => pure ()\n" + THM,
        "auto",
        "banned:elab_rules",
    ),
    (
        "@[command_elab]",
        "@[command_elab Lean.Parser.Command.check] def h : Lean.Elab.Command.CommandElab :=\n"
        "  fun _ => pure ()\n" + THM,
        "auto",
        "banned:command_elab",
    ),
    (
        "@[commandElab] (Lean 4.0 spelling)",
        "@[commandElab Lean.Parser.Command.check] def h : CommandElab := fun _ => pure ()\n" + THM,
        "auto",
        "banned:commandElab",
    ),
    (
        "@[term_elab]",
        "@[term_elab Lean.Parser.Term.app] def h : Lean.Elab.Term.TermElab := fun _ _ => failure\n"
        + THM,
        "auto",
        "banned:term_elab",
    ),
    (
        "@[tactic]",
        "@[tactic Lean.Parser.Tactic.tacticTrivial] def h : Lean.Elab.Tactic.Tactic :=\n"
        "  fun _ => pure ()\n" + THM,
        "auto",
        "not_allowed:@[tactic]",
    ),
    (
        "@[...] list",
        "@[simp, my_attr] theorem h : True := trivial\n" + THM,
        "auto",
        "not_allowed:@[my_attr]",
    ),
    ("deriving instance", "deriving instance Repr for Nat\n" + THM, "auto", "banned:deriving"),
    ("private duplicate", "private " + T + " := by simp\n" + THM, "auto", "not_allowed:duplicate"),
    (
        "decreasing_by on the trusted theorem",
        T + " := my_thm n\ndecreasing_by all_goals simp",
        "auto",
        "not_allowed:decreasing_by",
    ),
    (
        "termination_by in a proof",
        "by simp\ntermination_by n",
        "proof",
        "not_allowed:termination_by",
    ),
    (
        "decreasing_by hiding a denied tactic",
        "def f : ℕ → ℕ\n  | 0 => 0\n  | n + 1 => f n\ndecreasing_by native_decide\n" + THM,
        "auto",
        "banned:native_decide",
    ),
    (
        "recursion in a helper",
        "def f : ℕ → ℕ\n  | 0 => 0\n  | n + 1 => f n\ntermination_by n => n\n" + THM,
        "auto",
        None,
    ),
    (
        "raw string hides a comment",
        'def s := r#"a " -- "# #eval forge\n' + THM,
        "auto",
        "banned:#eval",
    ),
    (
        "raw string has no escapes",
        'def s := r#"\\"# #eval forge -- "\n' + THM,
        "auto",
        "banned:#eval",
    ),
    ("interpolation holds code", 'def s := s!"{(sorry : ℕ)}"\n' + THM, "auto", "banned:sorry"),
    (
        "m! interpolation holds code",
        'def s := m!"{Lean.ofReduceBool}"\n' + THM,
        "auto",
        "banned:ofReduceBool",
    ),
    (
        "string read two ways",
        'def s := f "{" ' + INSTANCE + ' -- "}"\n' + THM,
        "auto",
        "not_allowed:lexing (string read differently with and without interpolation)",
    ),
    ("quoted identifier «x--»", "def «x--» : ℕ := 1 #eval forge\n" + THM, "auto", "banned:#eval"),
    ("quoted identifier, honest", "def «x--» : ℕ := 1\n" + THM, "auto", None),
    (
        "char literal after a numeral",
        "def c : ℕ × Char := Prod.mk 2'\"' #eval forge -- \"\n" + THM,
        "auto",
        "banned:#eval",
    ),
    ("char literal '\"', honest", "def c : Char := '\"'\n" + THM, "auto", None),
    ("nested comments hide code", "/- outer /- inner -/ #eval forge -/\n" + THM, "auto", None),
    (
        "code after nested comments",
        "/- a /- b -/ c -/ " + INSTANCE + "\n" + THM,
        "auto",
        "not_allowed:instance",
    ),
    ("doc comment /--/", "/--/ #eval forge -/\n" + THM, "auto", None),
    (
        "unterminated comment",
        THM + "\n/- swallow what follows",
        "auto",
        "not_allowed:lexing (unterminated comment)",
    ),
    (
        "reserved names",
        "theorem rlv_audit_x : True := trivial\n" + THM,
        "auto",
        "not_allowed:reserved name",
    ),
    ("other # commands", THM + "\n#check 1", "auto", "not_allowed:#check"),
    ("instance", INSTANCE + "\n" + THM, "auto", "not_allowed:instance"),
    ("include", "variable (h : False)\ninclude h\n" + THM, "auto", "not_allowed:include"),
    ("export", "export Nat (succ)\n" + THM, "auto", "banned:export"),
    (
        "open of the answer's own namespace",
        "namespace Evil\ndef x := 1\nend Evil\nopen Evil\n" + THM,
        "auto",
        "not_allowed:open Evil",
    ),
    ("open of a header namespace", "open Nat in\n" + THM, "auto", None),
    (
        "namespace left open",
        "namespace Evil\n" + THM,
        "auto",
        "not_allowed:unclosed namespace Evil",
    ),
    ("@[simp] helper", "@[simp] theorem h (n : ℕ) : n + 0 = n := rfl\n" + THM, "auto", None),
    (
        "commands in a proof",
        "by simp\ntheorem extra : True := trivial",
        "proof",
        "not_allowed:theorem",
    ),
    ("open in a proof", "by\n  open Nat in simp", "proof", None),
]


@pytest.mark.parametrize(("form", "answer", "mode", "reason"), TABLE, ids=[row[0] for row in TABLE])
def test_screen_table(form: str, answer: str, mode: str, reason: str | None) -> None:
    assert screen(answer, mode) == reason, form


def screen(answer: str, mode: str = "auto") -> str | None:
    """The reason the verifier rejects ``answer`` before Lean runs (None: it goes to Lean)."""
    verifier = LeanVerifier({"mode": mode})
    try:
        verifier.prepare(parse_statement(T, "import Mathlib"), answer)
    except Rejected as exc:
        return exc.reason
    return None
