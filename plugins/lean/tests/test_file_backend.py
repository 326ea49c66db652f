"""The file backend: fresh `lean --json` processes per proof, statement first, kernel replay.

The fake toolchain (``fake_repl.py``) plays `lean --json [-R DIR] [-o OLEAN] FILE` and a checker
with lean4checker's interface (``leanchecker MODULE``), sandboxed and not.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lean_helpers import FAKE_CHECKER, FAKE_LEAN, FAKE_REPL

from rl_verifier_lean.candidate import build
from rl_verifier_lean.filecheck import (
    FileTools,
    ReplayUnavailable,
    check_file,
    file_text,
    replay_files,
)
from rl_verifier_lean.isolation import choose_sandbox, sandbox_reason
from rl_verifier_lean.judge import judge
from rl_verifier_lean.locate import LeanLaunch
from rl_verifier_lean.repl import ReplDied
from rl_verifier_lean.runner import HeaderFailed, ProofTimeout, StatementFailed
from rl_verifier_lean.statement import Statement, parse_reference
from rl_verifier_sandbox import Sandbox

HEADER = "import Init\nopen Nat"
STATEMENT = parse_reference({"statement": "theorem t (a b : Nat) : a + b = a", "header": HEADER})
FORGE = (
    "@[command_elab Lean.Parser.Command.check] def forge : Lean.Elab.Command.CommandElab :=\n"
    "  fun _ => Lean.modifyEnv fun env => addDecl env `forged False\n"
    "#check 0\n"
)


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox | None:
    if request.param == "none":
        return None
    if sandbox_reason("auto")[0] != "bwrap":
        pytest.skip(f"bubblewrap does not work here: {sandbox_reason('auto')[1]}")
    return choose_sandbox("bwrap")


def tools(checker: list[str] | None = FAKE_CHECKER) -> FileTools:
    return FileTools(LeanLaunch(list(FAKE_LEAN), None, {}, [FAKE_REPL]), checker)


def run(
    sandbox: Sandbox | None,
    block: str,
    *,
    replay: bool = True,
    checker: list[str] | None = FAKE_CHECKER,
    statement: Statement = STATEMENT,
    timeout_s: float = 20.0,
) -> tuple[bool, str | None]:
    candidate = build(statement, block, "auto")
    responses = asyncio.run(
        check_file(tools(checker), sandbox, statement, candidate, timeout_s, 512, replay)
    )
    j = judge(responses.candidate, responses.audit, candidate.audit_name, ["propext"])
    if j.passed and responses.replay is not None:
        return False, "replay"
    return j.passed, j.reason


def test_statement_comes_first_in_the_file() -> None:
    candidate = build(STATEMENT, "rfl", "proof")
    text = file_text(STATEMENT, candidate)
    header, statement, code = (text.index(s) for s in (HEADER, "rlv_stmt_", candidate.name))
    assert header < statement < code < text.index(f"#print axioms _root_.{candidate.audit_name}")
    stmt, cand = replay_files(STATEMENT, candidate)
    assert "rlv_stmt_" in stmt.text and candidate.name not in stmt.text
    assert cand.text.startswith("import RlvStmt\nopen Nat\n")  # header scopes come back
    assert "def " not in cand.text.split(candidate.name)[0]  # the statement is imported


@pytest.mark.parametrize("replay", [True, False])
def test_verdicts(sandbox: Sandbox | None, replay: bool) -> None:
    good = parse_reference({"statement": "theorem t (n : Nat) : n + 0 = n", "header": HEADER})
    assert run(sandbox, "by simp", statement=good, replay=replay) == (True, None)
    assert run(sandbox, "by exact bogus", replay=replay) == (False, "lean_error")
    assert run(sandbox, "by sorry", replay=replay) == (False, "sorry")


def test_a_changed_meaning_fails_the_audit(sandbox: Sandbox | None) -> None:
    attack = (
        "instance (priority := high) : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
        "theorem t (a b : Nat) : a + b = a := rfl"
    )
    assert run(sandbox, attack) == (False, "statement_changed")
    assert run(sandbox, attack, replay=False) == (False, "statement_changed")


def test_replay_catches_a_forged_constant(sandbox: Sandbox | None) -> None:
    attack = FORGE + "theorem t (a b : Nat) : a + b = a := forged.elim"
    assert run(sandbox, attack) == (False, "replay")
    # what replay closes: without it the forged constant looks like an axiom-free proof
    assert run(sandbox, attack, replay=False) == (True, None)


def test_replay_checks_the_audit_against_the_compiled_statement(
    sandbox: Sandbox | None,
) -> None:
    """A metaprogram re-elaborating the statement definition in the candidate's environment
    (after adding an instance) fools the audit in memory; replay checks the audit against the
    statement compiled on its own, before the candidate."""
    attack = (
        "instance (priority := high) : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n"
        "#eval Lean.modifyEnv (fun env => env) -- rewrite every rlv_stmt constant here\n"
        "theorem t (a b : Nat) : a + b = a := rfl"
    )
    assert run(sandbox, attack) == (False, "replay")
    assert run(sandbox, attack, replay=False) == (True, None)  # one module: not caught


def test_faults(sandbox: Sandbox | None) -> None:
    with pytest.raises(ProofTimeout):
        run(sandbox, "by simp -- FAKE_HANG", timeout_s=1.0)
    with pytest.raises(ReplDied):
        run(sandbox, "by simp -- FAKE_CRASH")
    with pytest.raises(ReplayUnavailable):
        run(sandbox, "rfl", checker=["python", FAKE_REPL + ".missing"])


@pytest.mark.parametrize("replay", [True, False])
def test_header_and_statement_faults_are_not_the_proof(
    sandbox: Sandbox | None, replay: bool
) -> None:
    header = "theorem h : True := bogus"
    bad_header = parse_reference({"statement": "theorem t : True", "header": header})
    with pytest.raises(HeaderFailed):
        run(sandbox, "trivial", statement=bad_header, replay=replay)
    bad = parse_reference({"statement": "theorem t (s : Nat) : s < bogus", "header": HEADER})
    with pytest.raises(StatementFailed):
        run(sandbox, "by simp", statement=bad, replay=replay)


def test_replay_needs_a_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rl_verifier_lean.config import LeanConfig
    from rl_verifier_lean.locate import LeanMissing, replay_argv

    monkeypatch.setenv("PATH", str(tmp_path))
    launch = LeanLaunch(["lean"], str(tmp_path), {"LEAN_SYSROOT": str(tmp_path / "toolchain")})
    with pytest.raises(LeanMissing, match="leanchecker"):
        replay_argv(LeanConfig(backend="file"), launch)
    (tmp_path / "toolchain" / "bin").mkdir(parents=True)
    checker = tmp_path / "toolchain" / "bin" / "leanchecker"
    checker.write_text("#!/bin/sh\n")
    checker.chmod(0o755)
    assert replay_argv(LeanConfig(backend="file"), launch) == [str(checker)]
    custom = LeanConfig(backend="file", replay_command=["python", "check.py"])
    assert replay_argv(custom, launch) == ["python", "check.py"]
