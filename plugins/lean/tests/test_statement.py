"""Task references, the completion's block, modes and the full-file statement check."""

from __future__ import annotations

import pytest

from rl_verifier_lean.candidate import Rejected, build, choose_mode
from rl_verifier_lean.statement import BadReference, last_lean_block, parse_reference

MINIF2F = {
    "name": "mathd_algebra_10",
    "formal_statement": "theorem mathd_algebra_10 : abs ((120 : ℝ) / 100 * 30 - 130) = 94 := by\n",
    "header": (
        "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators"
    ),
}


def test_reference_forms() -> None:
    s = parse_reference({"statement": "theorem t (a : ℕ) : a = a", "header": "import Mathlib"})
    assert (s.name, s.rest) == ("t", "(a : ℕ) : a = a")
    m = parse_reference(MINIF2F)
    assert m.name == "mathd_algebra_10" and m.rest.startswith(": abs")
    assert m.header == MINIF2F["header"]
    d = parse_reference({"formal_statement": "lemma x : True := by sorry"})
    assert d.text == "theorem x : True" and d.header == "import Mathlib"
    let = parse_reference({"statement": "theorem l : (let x := 1; x) = 1 := by\n  sorry"})
    assert let.rest == ": (let x := 1; x) = 1"
    with pytest.raises(BadReference):
        parse_reference({"statement": "def x := 1"})
    with pytest.raises(BadReference):
        parse_reference({})


def test_last_block() -> None:
    text = "```lean\nfirst\n```\nthen\n```lean4\nsecond\n```"
    assert last_lean_block(text) == "second\n"
    assert last_lean_block("```lean\nunterminated") == "unterminated"
    assert last_lean_block("no block") is None


def test_modes() -> None:
    assert choose_mode("by simp", "auto") == "proof"
    assert choose_mode("theorem t : True := trivial", "auto") == "full_file"
    assert choose_mode("-- theorem\nby simp", "auto") == "proof"
    assert choose_mode("by simp", "full_file") == "full_file"


STATEMENT = parse_reference({"statement": "theorem t (a b : ℕ) : a + b = b + a"})


def test_proof_mode_prepends_statement() -> None:
    c = build(STATEMENT, ":= by omega", "proof")
    assert c.code.startswith(f"theorem _root_.{c.name} (a b : ℕ) : a + b = b + a :=\nby omega")
    assert c.name != build(STATEMENT, "by omega", "proof").name  # fresh per check


def test_statement_is_elaborated_first_and_audited_by_name() -> None:
    """The statement is a definition on the header env; the audit only names it, so nothing
    the candidate declared in between can change what it means."""
    c = build(STATEMENT, "by omega", "proof")
    assert c.statement_command(STATEMENT) == (
        f"def _root_.{c.statement_name} : Prop :=\n  ∀ (a b : ℕ), a + b = b + a\n"
    )
    assert c.audit() == (
        f"theorem _root_.{c.audit_name} : _root_.{c.statement_name} :=\n"
        f"  @_root_.{c.name}\n\n#print axioms _root_.{c.audit_name}\n"
    )
    nonce = c.name.removeprefix("rlv_candidate_")
    assert c.audit_name.endswith(nonce) and c.statement_name.endswith(nonce)
    assert "∀" not in c.audit()  # the statement is not restated after the candidate


@pytest.mark.parametrize(
    ("statement", "proposition"),
    [
        ("theorem t : 1 + 1 = 2", "1 + 1 = 2"),
        ("theorem t (x : ℝ) (h₀ : x ≠ 0) : x / x = 1", "∀ (x : ℝ) (h₀ : x ≠ 0), x / x = 1"),
        (
            "theorem t {G : Type*} [AddCommGroup G] (a b : G) : a + b = b + a",
            "∀ {G : Type*} [AddCommGroup G] (a b : G), a + b = b + a",
        ),
        (
            "theorem t ⦃f : ℕ → ℕ⦄ (h : ∀ n, f n = n) : f 0 = 0",
            "∀ ⦃f : ℕ → ℕ⦄ (h : ∀ n, f n = n), f 0 = 0",
        ),
        ('theorem t (s : String := "a:b") : s = s', '∀ (s : String := "a:b"), s = s'),
        ("theorem t (n : ℕ) :\n  (n : ℤ) ≥ 0 := by sorry", "∀ (n : ℕ), (n : ℤ) ≥ 0"),
    ],
)
def test_audit_states_one_closed_proposition(statement: str, proposition: str) -> None:
    """Hypotheses are binders too: the audit must not need the conclusion to determine them
    (``cand ..`` would leave ``h₀`` as an unsolvable hole)."""
    assert parse_reference({"statement": statement}).as_proposition() == proposition


def test_statement_without_conclusion_is_refused() -> None:
    with pytest.raises(BadReference):
        parse_reference({"statement": "theorem t (h : a : b)"})


def test_full_file_accepts_reformatted_statement() -> None:
    block = (
        "import Mathlib\nopen Nat\n/- helper -/\ntheorem  t (a b:ℕ) :\n  a + b = b + a := by omega"
    )
    c = build(STATEMENT, block, "full_file")
    assert "import" not in c.code
    assert f"theorem _root_.{c.name} (a b:ℕ)" in c.code and "by omega" in c.code
    lemma = build(STATEMENT, "lemma t (a b : ℕ) : a + b = b + a := by omega", "auto")
    assert lemma.code.startswith(f"theorem _root_.{lemma.name}")


@pytest.mark.parametrize(
    "block",
    [
        "theorem t (a b : ℕ) : a + b = a + b := rfl",  # replaced
        "theorem t (a b : ℕ) (h : a = b) : a + b = b + a := by omega",  # weakened
        "-- theorem t (a b : ℕ) : a + b = b + a\ntheorem u : True := trivial",  # comment
        'def s := "theorem t (a b : ℕ) : a + b = b + a := x"\ntheorem u : True := trivial',
        "theorem t (a b : ℕ) : a + b = b + a ∨ True := by simp",  # extended
        "theorem other (a b : ℕ) : a + b = b + a := by omega",  # renamed
    ],
)
def test_full_file_rejects_changed_statement(block: str) -> None:
    with pytest.raises(Rejected) as info:
        build(STATEMENT, block, "full_file")
    assert info.value.reason == "statement_changed"
