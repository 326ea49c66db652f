"""The trusted statement means what it meant on the header, whatever the answer adds.

Every vector of issue 16 section 1, on both backends: an answer that changes what its own
restatement means (instances, attributes, default instances, namespaces and ``open``,
coercions, simp lemmas, ``export``) gets reward 0, from the audit (``statement_changed``) with
the screen off and from the screen with it on; honest answers pass. The fake toolchain models
what a proposition means in an environment (see ``fake_repl.py``); ``test_real_lean.py`` runs
the same attacks on real Lean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lean_helpers import fake_verifier, file_verifier, lean, run_all, task

from rl_verifier import Status, Verdict
from rl_verifier_lean.verifier import LeanVerifier

ADD = "theorem t (a b : Nat) : a + b = a"
FIVE = "theorem t : 2 + 2 = 5"
SUCC = "theorem t (n : Nat) : Nat.succ n = n"
NADD = "theorem t (a b : Nat) : Nat.add a b = a"
CAST = "theorem t (n : Nat) : (n : Int) < 0"
SIMP = "theorem t (xs : List Nat) (h : xs ≠ []) : xs.head (by simp [h]) = 0"
NE = "theorem t (n : Nat) : Nat.succ n ≠ 0"
CORE = "import Init"  # core Lean only, as in test_real_lean.py
HADD = "instance (priority := high) : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"

# name: (statement, answer, reason with the screen off, reason with the screen on)
VECTORS: dict[str, tuple[str, str, str, str]] = {
    "global instance": (ADD, HADD + ADD + " := rfl", "statement_changed", "not_allowed:instance"),
    "newest instance wins": (
        ADD,
        "instance : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n" + ADD + " := rfl",
        "statement_changed",
        "not_allowed:instance",
    ),
    "attribute [instance]": (
        ADD,
        "def evil : Add Nat := ⟨fun a _ => a⟩\nattribute [instance] evil\n" + ADD + " := rfl",
        "statement_changed",
        "banned:attribute",
    ),
    "@[instance]": (
        ADD,
        "@[instance] def evil : Add Nat := ⟨fun a _ => a⟩\n" + ADD + " := rfl",
        "statement_changed",
        "not_allowed:@[instance]",
    ),
    "attribute [-instance]": (
        ADD,
        "instance (priority := low) evil : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
        "attribute [-instance] instHAdd\n" + ADD + " := rfl",
        "statement_changed",
        "banned:attribute",
    ),
    "@[default_instance]": (
        FIVE,
        "inductive One\n  | one\ninstance : Add One := ⟨fun _ _ => .one⟩\n"
        "@[default_instance] instance (n : Nat) : OfNat One n := ⟨.one⟩\n" + FIVE + " := rfl",
        "statement_changed",
        "not_allowed:instance",
    ),
    "namespace redefines Nat.succ": (
        SUCC,
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := n\n" + SUCC + " := rfl\nend Evil",
        "statement_changed",
        "statement_changed",  # every command is allowed: the audit decides
    ),
    "namespace left open": (
        SUCC,
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := n\n" + SUCC + " := rfl",
        "statement_changed",
        "not_allowed:unclosed namespace Evil",
    ),
    "open activates a scoped instance": (
        ADD,
        "namespace Evil\nscoped " + HADD + "end Evil\nopen Evil\n" + ADD + " := rfl",
        "statement_changed",
        "not_allowed:scoped",
    ),
    "open shadows a name": (
        NADD,
        "namespace Evil\ndef Nat.add (a b : Nat) : Nat := a\nend Evil\nopen Evil\n"
        + NADD
        + " := rfl",
        "lean_error",  # Lean: ambiguous, possible interpretations
        "not_allowed:open Evil",
    ),
    "coercion instance": (
        CAST,
        "instance (priority := high) : NatCast Int := ⟨fun _ => -1⟩\n" + CAST + " := by decide",
        "statement_changed",
        "not_allowed:instance",
    ),
    "Coe instance": (
        CAST,
        "instance : Coe Nat Int := ⟨fun _ => -1⟩\n" + CAST + " := by decide",
        "statement_changed",
        "not_allowed:instance",
    ),
    # the fake takes any change of the simp set to change a term `by simp` builds inside a
    # statement; Lean may build the same (or a definitionally equal) term
    "@[simp] lemma": (
        SIMP,
        "@[simp] theorem evil (xs : List Nat) : xs.length = xs.length := rfl\n"
        + SIMP
        + " := by cases xs <;> rfl",
        "statement_changed",
        "statement_changed",  # @[simp] is allowed: the audit decides
    ),
    "attribute [simp]": (
        SIMP,
        "theorem evil (xs : List Nat) : xs.length = xs.length := rfl\nattribute [simp] evil\n"
        + SIMP
        + " := by cases xs <;> rfl",
        "statement_changed",
        "banned:attribute",
    ),
    "export": (
        NE,
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := 0\nend Evil\nexport Evil (Nat.succ)\n"
        + NE
        + " := by simp",
        "lean_error",  # Lean: ambiguous, possible interpretations
        "banned:export",
    ),
}

HONEST: dict[str, tuple[str, str]] = {
    "proof": (ADD.replace("= a", "= b + a"), "Nat.add_comm a b"),
    "helpers in a namespace": (
        ADD.replace("= a", "= b + a"),
        "namespace Helpers\ntheorem swap (a b : Nat) : a + b = b + a := Nat.add_comm a b\n"
        "end Helpers\nopen Nat in\n" + ADD.replace("= a", "= b + a") + " := Helpers.swap a b",
    ),
    "simp helper": (
        ADD.replace("= a", "= b + a"),
        "@[simp] theorem helper (a b : Nat) : a + b = b + a := Nat.add_comm a b\n"
        + ADD.replace("= a", "= b + a")
        + " := by simp",
    ),
    "statement with a tactic inside": (SIMP, "by cases xs <;> simp_all"),
    "default numerals": (FIVE.replace("5", "4"), "rfl"),
    "cast": (CAST.replace("< 0", "≥ 0"), "Int.natCast_nonneg n"),
    "section variable and recursion": (
        SUCC.replace("= n", "≠ 0"),
        "section\nvariable (k : Nat)\ndef double : Nat → Nat\n  | 0 => 0\n"
        "  | n + 1 => double n + 2\ntermination_by n => n\nend\n"
        + SUCC.replace("= n", "≠ 0")
        + " := Nat.succ_ne_zero n",
    ),
    "char and string literals": (
        NE,
        'def quote : Char := \'"\'\ndef s : String := s!"{quote}"\n' + NE + " := by simp",
    ),
}

Backend = Callable[..., LeanVerifier]
BACKENDS = {"repl": fake_verifier, "file": file_verifier}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


def verify(backend: Backend, statement: str, answer: str, **config: Any) -> Verdict:
    verifier = backend(timeout_s=60, proof_timeout_s=20, **config)
    return run_all(verifier, [(task(statement, header=CORE), lean(answer))])[0]


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_a_changed_meaning_is_caught_by_lean(backend: Backend, name: str) -> None:
    statement, answer, reason, _ = VECTORS[name]
    v = verify(backend, statement, answer, static_screen=False)
    assert v.status is Status.OK and v.reward == 0.0, (name, v)
    assert v.info["reason"] == reason, (name, v.info)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_a_changed_meaning_is_caught_with_the_screen_on(name: str) -> None:
    statement, answer, _, reason = VECTORS[name]
    v = verify(fake_verifier, statement, answer)
    assert v.status is Status.OK and v.reward == 0.0, (name, v)
    assert v.info["reason"] == reason, (name, v.info)


def test_an_allowed_instance_is_still_caught_by_the_audit() -> None:
    """Adding `instance` to the allowed commands moves the instance vector to Lean."""
    commands = ["theorem", "instance", "namespace", "end"]
    statement, answer, _, _ = VECTORS["global instance"]
    v = verify(fake_verifier, statement, answer, allowed_commands=commands)
    assert (v.reward, v.info["reason"]) == (0.0, "statement_changed"), v


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_answers_pass(backend: Backend, name: str) -> None:
    statement, answer = HONEST[name]
    v = verify(backend, statement, answer)
    assert v.status is Status.OK and v.reward == 1.0, (name, v)


def test_statement_is_sent_before_any_answer_text() -> None:
    """REPL requests: header, then the statement on the header env, then the answer on the
    statement's env, then the audit on the answer's env."""
    from rl_verifier_lean.repl import Repl

    sent: list[dict[str, Any]] = []
    original = Repl.send

    async def spy(self: Repl, request: dict[str, Any]) -> dict[str, Any]:
        answer = await original(self, request)
        sent.append({**request, "answer_env": answer.get("env")})
        return answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Repl, "send", spy)
        v = verify(fake_verifier, ADD, HADD + ADD + " := rfl", static_screen=False)
    assert v.reward == 0.0
    header, statement, answer, audit = sent
    assert "env" not in header
    assert statement["env"] == header["answer_env"] and "rlv_stmt_" in statement["cmd"]
    assert "HAdd" not in statement["cmd"] and "rfl" not in statement["cmd"]
    assert answer["env"] == statement["answer_env"] and "HAdd" in answer["cmd"]
    assert audit["env"] == answer["answer_env"] and "∀" not in audit["cmd"]
