"""The per-file backend (`lake env lean --json FILE`), with a fake `lean` printing JSON lines."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lean_helpers import FAKE_LEAN

from rl_verifier_lean.candidate import build
from rl_verifier_lean.filecheck import check_file, file_text
from rl_verifier_lean.isolation import choose_sandbox, sandbox_reason
from rl_verifier_lean.judge import judge
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.repl import ReplDied
from rl_verifier_lean.runner import ProofTimeout
from rl_verifier_lean.statement import parse_reference
from rl_verifier_sandbox.bwrap import BwrapSandbox

STATEMENT = parse_reference({"statement": "theorem t (n : ℕ) : n + 0 = n", "header": "import X"})


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> BwrapSandbox | None:
    if request.param == "none":
        return None
    if sandbox_reason("auto")[0] != "bwrap":
        pytest.skip(f"bubblewrap does not work here: {sandbox_reason('auto')[1]}")
    return choose_sandbox("bwrap")


def run(
    tmp_path: Path, sandbox: BwrapSandbox | None, proof: str, timeout_s: float = 10.0
) -> tuple[bool, str | None]:
    script = tmp_path / "fake_lean.py"
    script.write_text(FAKE_LEAN)
    launch = LeanLaunch(["python", str(script), "--json"], str(tmp_path), paths=[str(script)])
    candidate = build(STATEMENT, proof, "proof")
    responses = asyncio.run(check_file(launch, sandbox, STATEMENT, candidate, timeout_s, 512))
    j = judge(responses.candidate, responses.audit, candidate.audit_name, ["propext"])
    return j.passed, j.reason


def test_file_text_has_header_candidate_and_audit() -> None:
    candidate = build(STATEMENT, "by simp", "proof")
    text = file_text(STATEMENT, candidate)
    assert text.startswith("import X") and f"#print axioms {candidate.audit_name}" in text


def test_file_backend_verdicts(tmp_path: Path, sandbox: BwrapSandbox | None) -> None:
    assert run(tmp_path, sandbox, "by simp") == (True, None)
    assert run(tmp_path, sandbox, "by exact bogus") == (False, "lean_error")
    assert run(tmp_path, sandbox, "by decide") == (False, "sorry")


def test_file_backend_faults(tmp_path: Path, sandbox: BwrapSandbox | None) -> None:
    with pytest.raises(ProofTimeout):
        run(tmp_path, sandbox, "by simp FAKE_HANG", timeout_s=0.5)
    with pytest.raises(ReplDied):
        run(tmp_path, sandbox, "by simp FAKE_CRASH")
