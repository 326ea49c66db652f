"""Integration tests against a real Lean REPL; they run wherever lake and the REPL exist."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task
from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.locate import LeanMissing, repl_launch, which
from rl_verifier_lean.tasks import example_proof, example_tasks
from rl_verifier_lean.verifier import LeanVerifier


def _missing() -> str | None:
    if not which("lake"):
        return "lake is not installed (see `rlv lean doctor`)"
    try:
        repl_launch(LeanConfig(), sandboxed=False)
    except LeanMissing:
        return "no Lean REPL: set RLV_LEAN_PROJECT or put `repl` on PATH"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def test_real_lean_examples() -> None:
    verifier = LeanVerifier({"timeout_s": 600, "proof_timeout_s": 300, "pool_size": 1})

    async def go() -> None:
        try:
            for t in example_tasks():
                good = Completion(task_id=t.id, completion=f"```lean\n{example_proof(t.id)}\n```")
                v = await verifier.verify(t, good)
                assert v.status is Status.OK and v.reward == 1.0, (t.id, v)
                bad = Completion(task_id=t.id, completion="```lean\nby exact bogus_name\n```")
                v = await verifier.verify(t, bad)
                assert v.reward == 0.0 and v.info["reason"] == "lean_error", v
        finally:
            await verifier.close()

    asyncio.run(go())


ADVERSARIAL = [
    ("lean-one-add-one", "by sorry", "sorry"),
    ("lean-one-add-one", "by native_decide", "axiom"),
    ("lean-true", "by exact (sorryAx True false)", "sorry"),
    ("lean-one-add-one", "by\n  have : False := by sorry\n  exact this.elim", "sorry"),
]


def test_real_lean_catches_exploits_without_the_static_screen() -> None:
    """Lean-side detection alone (static screen off): sorry, native_decide, sorryAx."""
    verifier = LeanVerifier(
        {"timeout_s": 600, "proof_timeout_s": 300, "pool_size": 1, "static_screen": False}
    )
    tasks = {t.id: t for t in example_tasks()}

    async def go() -> None:
        try:
            for task_id, proof, reason in ADVERSARIAL:
                text = f"```lean\n{proof}\n```"
                v = await verifier.verify(
                    tasks[task_id], Completion(task_id=task_id, completion=text)
                )
                assert v.status is Status.OK and v.reward == 0.0, (proof, v)
                assert v.info["reason"] == reason, (proof, v.info)
        finally:
            await verifier.close()

    asyncio.run(go())


def test_real_lean_proofs_do_not_see_each_other() -> None:
    verifier = LeanVerifier({"timeout_s": 600, "proof_timeout_s": 300, "pool_size": 1})
    task = {t.id: t for t in example_tasks()}["lean-true"]
    first = (
        "```lean\ntheorem helper_lemma : True := trivial\n"
        "theorem true_holds : True := helper_lemma\n```"
    )
    second = "```lean\nhelper_lemma\n```"

    async def go() -> None:
        try:
            a = await verifier.verify(task, Completion(task_id=task.id, completion=first))
            assert a.reward == 1.0, a
            b = await verifier.verify(task, Completion(task_id=task.id, completion=second))
            assert b.reward == 0.0 and b.info["reason"] == "isolation", b
        finally:
            await verifier.close()

    asyncio.run(go())


# Held-in versions of issue 16's attacks, core Lean only (header `import Init`), with proofs
# that go through on real Lean in the attacked environment. Each must get reward 0 (any reason:
# the screen, the audit, or Lean rejecting the attack itself in some version); honest answers
# of the same shapes must get 1.
CORE = "import Init"
ADD = "theorem t (a b : Nat) : a + b = a"
FIVE = "theorem t : (2 : Nat) + 2 = 5"
SUCC = "theorem t (n : Nat) : Nat.succ n = n"
CAST = "theorem t (n : Nat) : (n : Int) < 0"
HADD = "instance (priority := high) : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
FORGE = (
    "open Lean Elab Command in\n"
    'elab "forge_false" : command => liftCoreM do\n'
    "  withOptions (fun o => o.setBool `debug.skipKernelTC true) do\n"
    "    addDecl (.thmDecl { name := `forged, levelParams := [],\n"
    "      type := mkConst ``False, value := mkConst ``True.intro })\n"
    "forge_false\n"
)
REAL_ATTACKS: dict[str, tuple[str, str]] = {
    "global instance": (ADD, HADD + ADD + " := rfl"),
    "attribute [instance]": (
        ADD,
        "def evil : Add Nat := ⟨fun a _ => a⟩\nattribute [instance] evil\n" + ADD + " := rfl",
    ),
    "attribute [-instance]": (
        ADD,
        "instance (priority := low) evil : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
        "attribute [-instance] instHAdd\n" + ADD + " := rfl",
    ),
    "@[default_instance]": (
        "theorem t : 2 + 2 = 5",
        "inductive One where\n  | one\ninstance : Add One := ⟨fun _ _ => .one⟩\n"
        "@[default_instance high] instance (n : Nat) : OfNat One n := ⟨.one⟩\n"
        "theorem t : 2 + 2 = 5 := rfl",
    ),
    "namespace redefines Nat.succ": (
        SUCC,
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := n\n" + SUCC + " := rfl\nend Evil",
    ),
    "namespace left open": (
        SUCC,
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := n\n" + SUCC + " := rfl",
    ),
    "open activates a scoped instance": (
        ADD,
        "namespace Evil\nscoped " + HADD + "end Evil\nopen Evil\n" + ADD + " := rfl",
    ),
    "coercion": (
        CAST,
        "instance (priority := high) : NatCast Int := ⟨fun _ => -1⟩\n"
        + CAST
        + " := by show (-1 : Int) < 0; decide",
    ),
    "export": (
        "theorem t (n : Nat) : Nat.succ n = n",
        "namespace Evil\ndef Nat.succ (n : Nat) : Nat := n\nend Evil\nexport Evil (Nat.succ)\n"
        + SUCC
        + " := rfl",
    ),
    "command elaborator forging False": (FIVE, FORGE + FIVE + " := forged.elim"),
    "quoted identifier hides #eval": (
        FIVE,
        "def «x--» : Nat := 1 #eval 0\n" + FIVE + " := by decide",
    ),
}
# Attacks that run code while elaborating: only the screen (and, with backend 'file', kernel
# replay) stops them, so they are not run with the screen off on the REPL backend.
RUNS_CODE = {"command elaborator forging False", "quoted identifier hides #eval"}
REAL_HONEST: dict[str, tuple[str, str]] = {
    "term proof": ("theorem t (a b : Nat) : a + b = b + a", "Nat.add_comm a b"),
    "universe-polymorphic binders": (
        "theorem t {α : Type _} (xs : List α) : xs ++ [] = xs",
        "List.append_nil xs",
    ),
    "hypothesis binder": ("theorem t (a b : Nat) (h : a = b) : b = a", "h.symm"),
    "helpers in a namespace": (
        "theorem t (n : Nat) : Nat.succ n ≠ 0",
        "namespace Helpers\ntheorem ne (n : Nat) : Nat.succ n ≠ 0 := Nat.succ_ne_zero n\n"
        "end Helpers\ntheorem t (n : Nat) : Nat.succ n ≠ 0 := Helpers.ne n",
    ),
    "default numerals": ("theorem t : 2 + 2 = 4", "rfl"),
    "cast": ("theorem t (n : Nat) : (n : Int) ≥ 0", "Int.ofNat_nonneg n"),
}


def core_verdicts(config: dict[str, Any], answers: dict[str, tuple[str, str]]) -> dict[str, Any]:
    verifier = LeanVerifier({"timeout_s": 600, "proof_timeout_s": 300, "pool_size": 1, **config})

    async def go() -> dict[str, Any]:
        found = {}
        try:
            for name, (statement, answer) in answers.items():
                reference = {"statement": statement, "header": CORE}
                task = Task(id=name, prompt="p", verifier="lean", reference=reference)
                text = f"```lean\n{answer}\n```"
                found[name] = await verifier.verify(task, Completion(task_id=name, completion=text))
        finally:
            await verifier.close()
        return found

    return asyncio.run(go())


def test_real_lean_held_in_attacks_with_the_screen() -> None:
    for name, v in core_verdicts({}, REAL_ATTACKS).items():
        assert v.status is Status.OK and v.reward == 0.0, (name, v)


def test_real_lean_statement_first_without_the_screen() -> None:
    """The audit alone: the statement was elaborated before the attack could change it."""
    attacks = {k: v for k, v in REAL_ATTACKS.items() if k not in RUNS_CODE}
    verdicts = core_verdicts({"static_screen": False}, attacks)
    for name, v in verdicts.items():
        assert v.status is Status.OK and v.reward == 0.0, (name, v)
    assert verdicts["global instance"].info["reason"] == "statement_changed"
    assert verdicts["namespace redefines Nat.succ"].info["reason"] == "statement_changed"


def test_real_lean_honest_core_answers() -> None:
    for name, v in core_verdicts({}, REAL_HONEST).items():
        assert v.status is Status.OK and v.reward == 1.0, (name, v)


def _checker_missing() -> str | None:
    from rl_verifier_lean.locate import file_launch, replay_argv

    config = LeanConfig(backend="file")
    try:
        replay_argv(config, file_launch(config))
    except LeanMissing as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_checker_missing() is not None, reason="no leanchecker / lean4checker")
def test_real_lean_file_backend_replays_the_answer() -> None:
    """Honest answers pass replay; forged constants (screen off) fail it."""
    honest = core_verdicts({"backend": "file"}, REAL_HONEST)
    assert all(v.reward == 1.0 for v in honest.values()), honest
    forged = core_verdicts(
        {"backend": "file", "static_screen": False},
        {"forged": REAL_ATTACKS["command elaborator forging False"]},
    )["forged"]
    assert forged.status is Status.OK and forged.reward == 0.0, forged
