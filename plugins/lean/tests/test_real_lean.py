"""Integration tests against a real Lean REPL; they run wherever lake and the REPL exist."""

from __future__ import annotations

import asyncio

import pytest

from rl_verifier.contracts import Completion, Status
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
