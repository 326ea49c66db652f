"""Integration tests against a real Lean REPL, found the way the verifier finds one (`rlv lean
doctor`): current Lean (a Lake project with Mathlib, or `repl` on PATH), or the Lean 4 of
June 2021 behind its REPL front (`RLV_LEAN_REPL`; the repository's conftest points it at
``../shared/lean4-2021`` where that exists). Without one every test skips, saying why. Tests
of one Lean's own behaviour (Mathlib, messages that differ) say so and skip on the other.

The checks share one event loop and one verifier per configuration, so the REPL (one per
verifier) is started once per configuration, not once per test.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rl_verifier import Completion, Status, Task, Verdict
from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.lean2021 import front_folder
from rl_verifier_lean.locate import LeanLaunch, LeanMissing, repl_launch
from rl_verifier_lean.tasks import example_proof, example_tasks
from rl_verifier_lean.verifier import LeanVerifier


def _found() -> tuple[LeanLaunch | None, str]:
    try:
        return repl_launch(LeanConfig(), sandboxed=False), ""
    except LeanMissing:
        return None, (
            "no Lean REPL here: set RLV_LEAN_PROJECT or RLV_LEAN_REPL, or put `repl` on PATH "
            "(see `rlv lean doctor`)"
        )


LAUNCH, MISSING = _found()
IS_2021 = LAUNCH is not None and front_folder(LAUNCH.argv[0]) is not None
pytestmark = pytest.mark.skipif(LAUNCH is None, reason=MISSING)
BASE = {"timeout_s": 600, "proof_timeout_s": 300, "pool_size": 1}
CORE = "import Init"


class Checker:
    """Verifiers by configuration, all on one event loop (a REPL belongs to one loop)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.verifiers: dict[str, LeanVerifier] = {}

    def verifier(self, config: dict[str, Any]) -> LeanVerifier:
        key = json.dumps(config, sort_keys=True)
        if key not in self.verifiers:
            self.verifiers[key] = LeanVerifier({**BASE, **config})
        return self.verifiers[key]

    def run(self, config: dict[str, Any], items: list[tuple[Task, str]]) -> list[Verdict]:
        """Each (task, Lean block) checked in order on the configuration's one REPL."""
        verifier = self.verifier(config)

        async def go() -> list[Verdict]:
            found = []
            for task, block in items:
                answer = Completion(task_id=task.id, completion=f"```lean\n{block}\n```")
                found.append(await verifier.verify(task, answer))
            return found

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        for verifier in self.verifiers.values():
            self.loop.run_until_complete(verifier.close())
        self.loop.close()


@pytest.fixture(scope="module")
def checker() -> Iterator[Checker]:
    found = Checker()
    yield found
    found.close()


def core_task(statement: str, header: str = CORE, name: str = "t") -> Task:
    reference = {"statement": statement, "header": header}
    return Task(id=name, prompt="p", verifier="lean", reference=reference)


def core_verdicts(
    checker: Checker, config: dict[str, Any], answers: dict[str, tuple[str, str]]
) -> dict[str, Verdict]:
    items = [(core_task(statement, name=n), answer) for n, (statement, answer) in answers.items()]
    return dict(zip(answers, checker.run(config, items), strict=True))


# Core Lean: right proofs in the forms both Leans accept, and wrong ones.
RIGHT: dict[str, tuple[str, str]] = {
    "closed arithmetic": ("theorem t : 2 + 3 = 5", "rfl"),
    "decidable": ("theorem t : 3 ≠ 8", "by decide"),
    "implication": ("theorem t (p : Prop) : p → p", "fun h => h"),
    "conjunction": ("theorem t (p q : Prop) : p ∧ q → q ∧ p", "fun ⟨hp, hq⟩ => ⟨hq, hp⟩"),
    "library lemma": ("theorem t (a b : Nat) : a + b = b + a", "Nat.add_comm a b"),
}
WRONG: dict[str, tuple[str, str]] = {
    "unknown name": ("theorem t : 2 + 3 = 5", "by exact bogus_name"),
    "rfl on a negation": ("theorem t : 3 ≠ 8", "rfl"),
    "a false statement": ("theorem t : 2 + 3 = 6", "rfl"),
    "the wrong form": ("theorem t (p q : Prop) : p ∧ q → q ∧ p", "fun h => h"),
}


def test_real_lean_right_proofs_pass_and_wrong_ones_fail(checker: Checker) -> None:
    for name, v in core_verdicts(checker, {}, RIGHT).items():
        assert v.status is Status.OK and v.reward == 1.0, (name, v)
    for name, v in core_verdicts(checker, {}, WRONG).items():
        assert v.status is Status.OK and v.reward == 0.0, (name, v)
        assert v.info["reason"] == "lean_error", (name, v.info)
    if IS_2021:
        return  # the `lean-example` task set needs Mathlib
    items = []
    for t in example_tasks():
        items += [(t, example_proof(t.id)), (t, "by exact bogus_name")]
    verdicts = checker.run({}, items)
    for (t, _), good, bad in zip(items[::2], verdicts[::2], verdicts[1::2], strict=True):
        assert good.status is Status.OK and good.reward == 1.0, (t.id, good)
        assert bad.reward == 0.0 and bad.info["reason"] == "lean_error", bad


# (statement, answer, reason with the screen off, reason with it on). Without the screen
# Lean itself must catch each one: its sorry warning, or `#print axioms` naming sorryAx or
# the smuggled axiom.
CHEATS: dict[str, tuple[str, str, str, str]] = {
    "sorry": ("theorem t : 2 + 2 = 5", "sorry", "sorry", "banned:sorry"),
    "sorry in a tactic": ("theorem t : 2 + 2 = 5", "by exact sorry", "sorry", "banned:sorry"),
    "sorry in a have": (
        "theorem t : 2 + 2 = 5",
        "by\n  have : False := sorry\n  exact this.elim",
        "sorry",
        "banned:sorry",
    ),
    "sorryAx": ("theorem t : False", "sorryAx False false", "sorry", "banned:sorryAx"),
    "a smuggled axiom": (
        "theorem t : 2 + 2 = 5",
        "axiom smuggled : 2 + 2 = 5\ntheorem t : 2 + 2 = 5 := smuggled",
        "axiom",
        "banned:axiom",
    ),
}


@pytest.mark.parametrize("screen", [False, True], ids=["lean alone", "with the screen"])
def test_real_lean_catches_sorry_and_smuggled_axioms(checker: Checker, screen: bool) -> None:
    answers = {name: (statement, answer) for name, (statement, answer, *_) in CHEATS.items()}
    for name, v in core_verdicts(checker, {"static_screen": screen}, answers).items():
        expected = CHEATS[name][3 if screen else 2]
        assert v.status is Status.OK and v.reward == 0.0, (name, v)
        assert v.info["reason"] == expected, (name, v.info)
        if not screen and expected == "axiom":
            assert v.info["axioms"] == ["smuggled"], v.info


# Mathlib tasks, screen off: (task, answer, reason). Current Lean only.
ADVERSARIAL = [
    ("lean-one-add-one", "by sorry", "sorry"),
    ("lean-one-add-one", "by native_decide", "axiom"),
    ("lean-true", "by exact (sorryAx True false)", "sorry"),
    ("lean-one-add-one", "by\n  have : False := by sorry\n  exact this.elim", "sorry"),
]


def test_real_lean_sorry_tactic_and_native_decide(checker: Checker) -> None:
    """Screen off, Lean alone. Current Lean reads `by sorry` as sorry and `native_decide` as
    depending on the axiom Lean.ofReduceBool; 2021's Lean has neither the tactic nor
    native_decide, so both are errors there."""
    items = [(core_task("theorem t : 2 + 2 = 4"), a) for a in ("by sorry", "by native_decide")]
    by_sorry, native = checker.run({"static_screen": False}, items)
    assert by_sorry.status is Status.OK and native.status is Status.OK
    assert by_sorry.reward == native.reward == 0.0, (by_sorry, native)
    if IS_2021:
        assert by_sorry.info["reason"] == "lean_error", by_sorry.info
        assert "expected '{' or tactic" in by_sorry.info["detail"]
        assert native.info["reason"] == "lean_error", native.info
        assert "unknown tactic" in native.info["detail"]
        return
    assert (by_sorry.info["reason"], native.info["reason"]) == ("sorry", "axiom")
    tasks = {t.id: t for t in example_tasks()}
    items = [(tasks[task_id], proof) for task_id, proof, _ in ADVERSARIAL]
    verdicts = checker.run({"static_screen": False}, items)
    for (_, proof, reason), v in zip(ADVERSARIAL, verdicts, strict=True):
        assert v.status is Status.OK and v.reward == 0.0, (proof, v)
        assert v.info["reason"] == reason, (proof, v.info)


DOUBLE = "import Init\ndef double (n : Nat) : Nat := n + n"


def test_real_lean_answers_that_change_the_statement_fail(checker: Checker) -> None:
    restated = core_task("theorem t : 2 + 2 = 5")
    redefined = core_task("theorem t : double 2 = 5", header=DOUBLE)
    items = [
        # A full file restating another theorem under the trusted name.
        (restated, "theorem t : 2 + 2 = 4 := rfl"),
        # A namespace whose `double` shadows the header's while the theorem is restated.
        (redefined, "namespace Evil\ndef double (n : Nat) : Nat := n + 3\n"
         "theorem t : double 2 = 5 := rfl\nend Evil"),
    ]  # fmt: skip
    for v in checker.run({}, items):
        assert v.status is Status.OK and v.reward == 0.0, v
        assert v.info["reason"] == "statement_changed", v.info
    # Closing the trusted theorem early and declaring another after it: the screen allows no
    # command in a proof; without it, Lean fails the trusted theorem's own proof.
    early = (restated, "by decide\n\ntheorem t' : 2 + 2 = 4 := rfl")
    [screened] = checker.run({"mode": "proof"}, [early])
    assert (screened.reward, screened.info["reason"]) == (0.0, "not_allowed:theorem"), screened
    [unscreened] = checker.run({"mode": "proof", "static_screen": False}, [early])
    assert (unscreened.reward, unscreened.info["reason"]) == (0.0, "lean_error"), unscreened


def wait_until(condition: Callable[[], bool], limit_s: float = 60.0) -> bool:
    """Whether ``condition`` holds within ``limit_s`` (polled: a killed process takes a moment
    to be reaped)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def lean_processes() -> set[str]:
    done = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True)
    return {line for line in done.stdout.splitlines() if "Candidate.lean" in line}


def test_real_lean_a_proof_that_runs_too_long_is_the_models_failure(checker: Checker) -> None:
    """Lean spends the whole `proof_timeout_s` on the answer: `ok` 0 (reason timeout), never
    status timeout, and the REPL with the Lean it started is killed."""
    task = core_task("theorem t : (List.replicate 2000 1).length = 2000")
    before = lean_processes()
    [v] = checker.run({"proof_timeout_s": 5}, [(task, "by decide")])
    assert v.status is Status.OK and v.reward == 0.0, v
    if IS_2021:  # no heartbeat limit in 2021's Lean: only the deadline stops it
        assert (v.info["reason"], v.info["limit"]) == ("timeout", "proof_timeout_s"), v.info
    else:  # current Lean may stop it first (maxHeartbeats, maxRecDepth): an error, also 0
        assert v.info["reason"] in ("timeout", "lean_error"), v.info
    [after] = checker.run({"proof_timeout_s": 5}, [(core_task("theorem t : 2 + 3 = 5"), "rfl")])
    assert after.reward == 1.0, after  # a fresh REPL answers the next proof
    assert wait_until(lambda: lean_processes() <= before), lean_processes() - before


def test_real_lean_doctor_proves_a_theorem_with_the_lean_found() -> None:
    from rl_verifier_lean.doctor import format_report, run_doctor

    report = run_doctor(LeanConfig())
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] and checks["smoke"]["ok"], format_report(report)
    assert LAUNCH is not None and checks["repl"]["detail"].startswith(" ".join(LAUNCH.argv))
    if IS_2021:
        assert checks["lean"]["ok"] and "Lean 4 of June 2021" in checks["lean"]["detail"]


def test_real_lean_proofs_do_not_see_each_other(checker: Checker) -> None:
    task = core_task("theorem true_holds : True")
    first = "theorem helper_lemma : True := trivial\ntheorem true_holds : True := helper_lemma"
    a, b = checker.run({}, [(task, first), (task, "helper_lemma")])
    assert a.reward == 1.0, a
    assert b.reward == 0.0 and b.info["reason"] == "isolation", b


# Held-in versions of issue 16's attacks, core Lean only (header `import Init`), with proofs
# that go through on real Lean in the attacked environment. Each must get reward 0 (any reason:
# the screen, the audit, or Lean rejecting the attack itself in some version); honest answers
# of the same shapes must get 1.
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
if IS_2021:  # the same shapes in 2021's library names (camelCase, fewer lemmas)
    REAL_HONEST["helpers in a namespace"] = (
        "theorem t (n : Nat) : Nat.succ n ≠ 0",
        "namespace Helpers\ntheorem ne (n : Nat) : Nat.succ n ≠ 0 := fun h => Nat.noConfusion h\n"
        "end Helpers\ntheorem t (n : Nat) : Nat.succ n ≠ 0 := Helpers.ne n",
    )
    REAL_HONEST["cast"] = ("theorem t (n : Nat) : (n : Int) ≥ 0", "Int.NonNeg.mk n")


def test_real_lean_held_in_attacks_with_the_screen(checker: Checker) -> None:
    for name, v in core_verdicts(checker, {}, REAL_ATTACKS).items():
        assert v.status is Status.OK and v.reward == 0.0, (name, v)


def test_real_lean_statement_first_without_the_screen(checker: Checker) -> None:
    """The audit alone: the statement was elaborated before the attack could change it."""
    attacks = {k: v for k, v in REAL_ATTACKS.items() if k not in RUNS_CODE}
    verdicts = core_verdicts(checker, {"static_screen": False}, attacks)
    for name, v in verdicts.items():
        assert v.status is Status.OK and v.reward == 0.0, (name, v)
    assert verdicts["global instance"].info["reason"] == "statement_changed"
    assert "type mismatch" in verdicts["global instance"].info["detail"]
    assert verdicts["namespace redefines Nat.succ"].info["reason"] == "statement_changed"


def test_real_lean_honest_core_answers(checker: Checker) -> None:
    for name, v in core_verdicts(checker, {}, REAL_HONEST).items():
        assert v.status is Status.OK and v.reward == 1.0, (name, v)


def _checker_missing() -> str | None:
    from rl_verifier_lean.locate import file_launch, replay_argv

    config = LeanConfig(backend="file")
    try:
        replay_argv(config, file_launch(config))
    except LeanMissing as exc:
        return str(exc)
    return None


def test_real_lean_file_backend_replays_the_answer(checker: Checker) -> None:
    """Honest answers pass replay; forged constants (screen off) fail it. 2021's Lean has no
    `lean --json` and no lake: there every answer is `error`, saying to use backend 'repl'."""
    if IS_2021:
        [v] = checker.run({"backend": "file"}, [(core_task("theorem t : 2 + 3 = 5"), "rfl")])
        assert v.status is Status.ERROR and "use backend 'repl'" in (v.error or ""), v
        return
    if missing := _checker_missing():
        pytest.skip(f"no kernel-replay checker: {missing}")
    honest = core_verdicts(checker, {"backend": "file"}, REAL_HONEST)
    assert all(v.reward == 1.0 for v in honest.values()), honest
    forged = core_verdicts(
        checker,
        {"backend": "file", "static_screen": False},
        {"forged": REAL_ATTACKS["command elaborator forging False"]},
    )["forged"]
    assert forged.status is Status.OK and forged.reward == 0.0, forged
