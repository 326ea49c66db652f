"""Shared helpers: the fake toolchain's command lines and verifiers configured to use it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rl_verifier import Completion, Task, Verdict
from rl_verifier_lean.verifier import LeanVerifier

FAKE_REPL = str(Path(__file__).with_name("fake_repl.py"))
FAKE_CONFIG: dict[str, Any] = {
    "repl_command": ["python", FAKE_REPL],
    "pool_size": 2,
    "memory_mb": 512,
    "proof_timeout_s": 2.0,
    "timeout_s": 20.0,
}
# The fake toolchain's `lean --json` and kernel-replay checker (same file, other personality).
FAKE_LEAN = ["python", FAKE_REPL, "lean", "--json"]
FAKE_CHECKER = ["python", FAKE_REPL, "leanchecker"]
STATEMENT = "theorem my_thm (n : ℕ) : n + 0 = n"
HEADER = "import Mathlib\nopen Nat"


def task(statement: str = STATEMENT, **extra: Any) -> Task:
    reference = {"statement": statement, "header": HEADER, **extra}
    return Task(id="t", prompt="p", reference=reference)


def lean(body: str) -> str:
    return f"Here is the proof.\n```lean\n{body}\n```\n"


def fake_verifier(**overrides: Any) -> LeanVerifier:
    return LeanVerifier({**FAKE_CONFIG, **overrides})


def file_verifier(**overrides: Any) -> LeanVerifier:
    """The file backend on the fake `lean` and checker (no Lake project needed); sandboxed
    like real Lean wherever bubblewrap works."""
    from rl_verifier_lean.filecheck import FileTools
    from rl_verifier_lean.isolation import choose_sandbox
    from rl_verifier_lean.locate import LeanLaunch

    verifier = LeanVerifier({**FAKE_CONFIG, "backend": "file", **overrides})
    cfg = verifier.config
    checker = list(FAKE_CHECKER) if cfg.replay_on else None
    lean = LeanLaunch(list(FAKE_LEAN), None, {}, [FAKE_REPL])
    verifier._file_backend = (choose_sandbox(cfg.sandbox), FileTools(lean, checker))
    return verifier


def run_all(verifier: LeanVerifier, items: list[tuple[Task, str]]) -> list[Verdict]:
    """Verify sequentially on one event loop, then close the pool."""

    async def go() -> list[Verdict]:
        try:
            return [
                await verifier.verify(t, Completion(task_id=t.id, completion=c)) for t, c in items
            ]
        finally:
            await verifier.close()

    return asyncio.run(go())


def check(body: str, statement: str = STATEMENT, **overrides: Any) -> Verdict:
    return run_all(fake_verifier(**overrides), [(task(statement), lean(body))])[0]
