"""Integration tests against a real Lean REPL; they run wherever lake and the REPL exist."""

from __future__ import annotations

import asyncio
import os

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
    assert os.environ is not None
