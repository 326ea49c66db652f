"""Every case of the issue, against the fake REPL."""

from __future__ import annotations

from typing import Any

import pytest
from lean_helpers import STATEMENT, check, fake_verifier, lean, run_all, task

from rl_verifier import Status, Verdict

NO_SCREEN: dict[str, Any] = {"static_screen": False}


def passed(v: Verdict) -> bool:
    return v.status is Status.OK and v.reward == 1.0


def failed(v: Verdict, reason: str) -> bool:
    return v.status is Status.OK and v.reward == 0.0 and v.info.get("reason") == reason


def test_valid_proofs_pass() -> None:
    v = check("by simp")
    assert passed(v), v
    assert v.info["axioms"] == ["propext"] and v.info["mode"] == "proof"
    assert passed(check(":= by trivial"))
    assert passed(check(f"import Mathlib\n{STATEMENT} := by decide"))


def test_classical_choice_passes() -> None:
    v = check("by exact Classical.byContradiction fun h => h rfl")
    assert passed(v) and "Classical.choice" in v.info["axioms"]


def test_info_and_linter_messages_pass() -> None:
    assert passed(check("by simp -- FAKE_INFO"))
    assert passed(check("by simp -- FAKE_LINT"))


@pytest.mark.parametrize("word", ["sorry", "admit"])
def test_sorry_caught_statically(word: str) -> None:
    assert failed(check(f"by {word}"), f"banned:{word}")


@pytest.mark.parametrize("spelling", ["", "-- FAKE_NEW_SORRY"])
@pytest.mark.parametrize("word", ["sorry", "admit"])
def test_sorry_caught_by_lean(word: str, spelling: str) -> None:
    assert failed(check(f"by {word} {spelling}", **NO_SCREEN), "sorry")


def test_sorry_warning_alone_fails() -> None:
    from rl_verifier_lean.judge import has_sorry

    for data in ("declaration uses 'sorry'", "declaration uses `sorry`"):
        assert has_sorry({"env": 1, "messages": [{"severity": "warning", "data": data}]})


def test_sorry_ax_in_opaque() -> None:
    body = (
        "opaque hole : False := sorryAx False\n"
        + "theorem my_thm (n : ℕ) : n + 0 = n := by exact hole"
    )
    assert failed(check(body), "banned:sorryAx")
    assert failed(check(body, **NO_SCREEN), "sorry")


@pytest.mark.parametrize("body", ["by exact bogus", "by simp -- FAKE_UNSOLVED", "by FAKE_PARSE at"])
def test_lean_errors(body: str) -> None:
    assert failed(check(body), "lean_error")


def test_axiom_cheat() -> None:
    body = f"axiom cheat : False\n{STATEMENT} := by exact cheat"
    assert failed(check(body), "banned:axiom")
    v = check(body, **NO_SCREEN)
    assert failed(v, "axiom") and v.info["axioms"] == ["cheat"]


@pytest.mark.parametrize("marker", ["", "-- FAKE_NEW_NATIVE"])
def test_native_decide_axioms(marker: str) -> None:
    assert failed(check(f"by native_decide {marker}"), "banned:native_decide")
    v = check(f"by native_decide {marker}", **NO_SCREEN)
    assert failed(v, "axiom")
    assert any("ofReduceBool" in a or "native_decide.ax" in a for a in v.info["axioms"])


@pytest.mark.parametrize(
    "block",
    [
        "theorem my_thm (n : ℕ) : n = n := rfl",
        "theorem my_thm (n : ℕ) (h : n = 0) : n + 0 = n := by simp",
        "/- theorem my_thm (n : ℕ) : n + 0 = n := by simp -/\ntheorem x : True := trivial",
        'def s := "theorem my_thm (n : ℕ) : n + 0 = n := by simp"\ntheorem x : True := trivial',
    ],
)
def test_statement_changed(block: str) -> None:
    assert failed(check(block), "statement_changed")


@pytest.mark.parametrize(
    ("block", "token"),
    [
        (
            "local instance : Add ℕ := ⟨fun _ _ => 3⟩\n" + STATEMENT + " := by decide",
            "local instance",
        ),
        (
            "macro_rules | `(tactic| trivial) => `(tactic| sorry)\n" + STATEMENT + " := by trivial",
            "sorry",
        ),
        (
            "macro_rules | `(tactic| trivial) => `(tactic| exact hole)\n"
            + STATEMENT
            + " := by trivial",
            "macro_rules",
        ),
        ('notation "ℕ" => Unit\n' + STATEMENT + " := rfl", "notation"),
        (
            'set_option debug.skipKernelTC true\nelab "cheat" : tactic => pure ()\n'
            + STATEMENT
            + " := by cheat",
            "elab",
        ),
        (
            "run_tac Lean.addDecl (.axiomDecl {name := `x, levelParams := [], type := .sort 0, "
            "isUnsafe := false})\n" + STATEMENT + " := by simp",
            "run_tac",
        ),
        (STATEMENT + " := by simp\n#exit", "#exit"),
        (
            STATEMENT + " := by simp\n#eval IO.println \"'my_thm' does not depend on any axioms\"",
            "#eval",
        ),
        (
            "@[implemented_by f] def g : Bool := true\n" + STATEMENT + " := by simp",
            "implemented_by",
        ),
        ('@[extern "f"] opaque g : Bool\n' + STATEMENT + " := by simp", "extern"),
        ("@[csimp] theorem c : 1 = 1 := rfl\n" + STATEMENT + " := by simp", "csimp"),
        ("unsafe def g : Bool := true\n" + STATEMENT + " := by simp", "unsafe"),
        ("partial def g : ℕ → ℕ := g\n" + STATEMENT + " := by simp", "partial"),
        ("open private foo in\n" + STATEMENT + " := by simp", "open private"),
    ],
)
def test_banned_exploits(block: str, token: str) -> None:
    v = check(block)
    assert failed(v, f"banned:{token}"), v


def test_proof_b_cannot_use_lemma_from_proof_a() -> None:
    verifier = fake_verifier(pool_size=1)
    a = lean(f"theorem helper_lemma : True := trivial\n{STATEMENT} := by simp")
    b = lean("by exact helper_lemma")
    va, vb = run_all(verifier, [(task(), a), (task(), b)])
    assert passed(va), va
    assert failed(vb, "isolation") and "helper_lemma" in str(vb.info["messages"])
    [alone] = run_all(fake_verifier(), [(task(), b)])
    assert failed(alone, "lean_error")


def test_unknown_environment_is_isolation() -> None:
    from rl_verifier_lean.judge import judge

    j = judge({"message": "Unknown environment."}, {}, "x", ["propext"])
    assert (j.passed, j.reason) == (False, "isolation")
    j = judge({"env": 2}, {"env": 3}, "x", ["propext"])  # audit message missing
    assert (j.passed, j.reason) == (False, "isolation")


# The three attacks that scored 1 on real Lean 4.0 behind the old screen (issue 16), in their
# shapes here; the fake forges what a metaprogram adds (see fake_repl.py).
FIVE = "theorem t : (2 : Nat) + 2 = 5"
FORGE = "Lean.modifyEnv fun env => addDecl env `forged False"
HELD_OUT = {
    "global instance": (
        "theorem t (a b : Nat) : a + b = a",
        "instance (priority := high) : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
        "theorem t (a b : Nat) : a + b = a := rfl",
        "not_allowed:instance",
    ),
    "command elaborator": (
        FIVE,
        "@[commandElab Lean.Parser.Command.check] def forge : CommandElab := fun _ => "
        + FORGE
        + "\n#check 0\n"
        + FIVE
        + " := forged.elim",
        "banned:commandElab",
    ),
    "quoted identifier hides #eval": (
        FIVE,
        "def «x--» : Nat := 1 #eval " + FORGE + "\n" + FIVE + " := forged.elim",
        "banned:#eval",
    ),
}


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_held_out_attacks_are_screened(name: str) -> None:
    statement, answer, reason = HELD_OUT[name]
    v = check(answer, statement)
    assert failed(v, reason), v


@pytest.mark.parametrize("name", ["command elaborator", "quoted identifier hides #eval"])
def test_forged_constants_fail_kernel_replay(name: str) -> None:
    """With the screen off, the file backend's replay catches what the metaprogram forged."""
    from lean_helpers import file_verifier

    statement, answer, _ = HELD_OUT[name]
    verifier = file_verifier(static_screen=False, timeout_s=60, proof_timeout_s=20)
    [v] = run_all(verifier, [(task(statement, header="import Init"), lean(answer))])
    assert failed(v, "replay"), v
    assert "lean4checker found a problem" in v.info["detail"]


def test_never_axioms_cannot_be_allowed() -> None:
    """sorryAx, Lean.ofReduceBool and Lean.trustCompiler are never a proof (issue 16 section 4);
    a config listing one is refused in one line."""
    from rl_verifier import UserError
    from rl_verifier_lean.judge import judge

    for name in ("sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler"):
        with pytest.raises(UserError, match=name):
            fake_verifier(allowed_axioms=["propext", name])
        audit = {
            "env": 1,
            "messages": [{"severity": "info", "data": f"'x' depends on axioms: [{name}]"}],
        }
        assert not judge({"env": 0}, audit, "x", ["propext", name]).passed


def test_an_axiom_the_answer_declares_never_passes() -> None:
    """Even when a config happens to allow a name, the answer cannot declare it."""
    body = f"axiom cheat : False\n{STATEMENT} := by exact cheat"
    v = check(body, static_screen=False, allowed_axioms=["propext", "cheat"])
    assert failed(v, "axiom") and v.info["axioms"] == ["cheat"]
