"""Static screen and lexing."""

from __future__ import annotations

import pytest

from rl_verifier_lean.lexer import code_only, normalise
from rl_verifier_lean.screen import DEFAULT_BANNED, first_banned


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
