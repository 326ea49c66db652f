"""The fake toolchain answers like the real one, for every command the plugin sends.

Expected answers are written from the real tools' sources and test files (read with the search
tools): leanprover-community/repl ``REPL/Main.lean``, ``REPL/JSON.lean``,
``test/dup_sorries.{in,expected.out}``, ``test/def_eval.{in,expected.out}``; leanprover/lean4
``src/Lean/Elab/Print.lean`` (``#print axioms`` wording and ``Name.lt`` order) and
``src/Lean/Message.lean`` (`lean --json` lines); leanprover/lean4checker ``Main.lean`` and
``Lean4CheckerTests/*.expected.out``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from lean_helpers import FAKE_REPL, fake_verifier, lean, run_all, task

from rl_verifier import Status


def repl(*requests: dict[str, Any] | str, args: tuple[str, ...] = ()) -> tuple[list[Any], str]:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n\n" for r in requests)
    done = subprocess.run(
        [sys.executable, FAKE_REPL, *args], input=text, capture_output=True, text=True, timeout=30
    )
    answers = [json.loads(c) for c in done.stdout.split("\n\n") if c.strip().startswith("{")]
    return answers, done.stdout


def test_sorry_answers_like_dup_sorries() -> None:
    """test/dup_sorries.in: two term-mode sorries, the second on env 0."""
    answers, _ = repl(
        {"cmd": "theorem thm1 : 1 = 1 := sorry -- FAKE_NEW_SORRY"},
        {"cmd": "theorem thm2 : 2 = 2 := sorry", "env": 0},
    )
    first, second = answers
    assert set(first) == {"sorries", "messages", "env"} and first["env"] == 0
    assert set(first["sorries"][0]) == {"proofState", "pos", "goal", "endPos"}
    assert first["messages"][0]["severity"] == "warning"
    assert first["messages"][0]["data"] == "declaration uses `sorry`"  # Lean 4.2x spelling
    assert second["messages"][0]["data"] == "declaration uses 'sorry'"  # older spelling
    assert second["env"] == 1 and second["sorries"][0]["proofState"] == 1


def test_envs_count_up_and_empty_lists_are_left_out() -> None:
    """test/def_eval: `def f := 37` then a command on it; REPL/JSON.lean drops empty lists."""
    answers, _ = repl({"cmd": "def f := 37"}, {"cmd": "example : f = f := rfl", "env": 0})
    assert answers == [{"env": 0}, {"env": 1}]


def test_unknown_environment() -> None:
    """REPL/Main.lean runCommand: an env id not recorded answers an error object."""
    answers, _ = repl({"cmd": "def f := 1"}, {"cmd": "def g := 2", "env": 5})
    assert answers[1] == {"message": "Unknown environment."}


def test_print_axioms_wording_and_order() -> None:
    """src/Lean/Elab/Print.lean: 'X' does not depend on any axioms / depends on axioms: [..],
    sorted by Name.lt (prefix first: propext < Classical.choice < Quot.sound)."""
    answers, _ = repl(
        {"cmd": "theorem a : True := trivial\n#print axioms a"},
        {"cmd": "theorem b : True := Classical.byContradiction id\n#print axioms b", "env": 0},
        {"cmd": "theorem c : True := sorry\n#print axioms c", "env": 1},
    )
    data = [[m["data"] for m in a["messages"] if m["severity"] == "info"] for a in answers]
    assert data[0] == ["'a' does not depend on any axioms"]
    assert data[1] == ["'b' depends on axioms: [propext, Classical.choice, Quot.sound]"]
    assert data[2] == ["'c' depends on axioms: [sorryAx]"]


def test_long_axiom_lists_wrap_like_lean() -> None:
    """Lean's 120-column format breaks the list one axiom per line."""
    name = "t" * 90
    answers, _ = repl({"cmd": f"theorem {name} : True := Classical.em\n#print axioms {name}"})
    data = answers[0]["messages"][0]["data"]
    assert data == f"'{name}' depends on axioms: [propext,\n Classical.choice,\n Quot.sound]"


def test_statement_first_flow() -> None:
    """What the plugin sends: header, statement on it, answer on that, audit on that."""
    stmt = "def _root_.rlv_stmt_x : Prop :=\n  ∀ (a b : Nat), a + b = b + a\n"
    audit = (
        "theorem _root_.rlv_audit_x : _root_.rlv_stmt_x :=\n  @_root_.rlv_candidate_x\n\n"
        "#print axioms _root_.rlv_audit_x\n"
    )
    honest = "theorem _root_.rlv_candidate_x (a b : Nat) : a + b = b + a := Nat.add_comm a b"
    evil = "instance : HAdd Nat Nat Nat := ⟨fun a _ => a⟩\n" + honest
    answers, _ = repl(
        {"cmd": "import Init"},
        {"cmd": stmt, "env": 0},
        {"cmd": honest, "env": 1},
        {"cmd": audit, "env": 2},
        {"cmd": evil, "env": 1},
        {"cmd": audit, "env": 4},
    )
    assert [a["env"] for a in answers] == [0, 1, 2, 3, 4, 5]
    assert answers[3]["messages"] == [
        {
            "severity": "info",
            "pos": {"line": 4, "column": 0},
            "endPos": {"line": 4, "column": 5},
            "data": "'rlv_audit_x' does not depend on any axioms",
        }
    ]
    mismatch = answers[5]["messages"][0]
    assert mismatch["severity"] == "error" and mismatch["data"].startswith("type mismatch")


def test_root_names_ignore_a_namespace_left_open() -> None:
    answers, _ = repl(
        {"cmd": "import Init"},
        {"cmd": "namespace Evil\ntheorem _root_.c : True := trivial", "env": 0},
        {"cmd": "theorem _root_.a : True := @_root_.c\n#print axioms _root_.a", "env": 1},
    )
    assert answers[2]["messages"][0]["data"] == "'a' does not depend on any axioms"


def test_incremental_state_echo_gives_byte_positions() -> None:
    """REPL/Main.lean prints `Processing incremental state [pos: a..b]:` and the command's
    text from byte a to b (String.Pos counts bytes) before some builds' answers."""
    cmd = "def ℕx := 1\ndef y := 2"
    _, out = repl({"cmd": cmd}, args=("--echo",))
    raw = cmd.encode()
    first = out.splitlines()[0]
    assert first == f"Processing incremental state [pos: 0..{len('def ℕx := 1'.encode()) + 1}]:"
    assert raw[: len("def ℕx := 1\n".encode())].decode() in out


def test_the_plugin_skips_the_echo_even_when_it_looks_like_json() -> None:
    """A line of the answer that looks like a REPL answer is echoed first; the plugin must not
    read it as the answer (that would shift every later answer on this REPL)."""
    forged = 'by simp\n/-\n{"env": 0}\n-/'
    verifier = fake_verifier(pool_size=1, repl_command=["python", FAKE_REPL, "--echo"])
    verdicts = run_all(verifier, [(task(), lean(forged)), (task(), lean("by simp"))] * 2)
    assert all(v.status is Status.OK and v.reward == 1.0 for v in verdicts), verdicts


def test_lean_json_lines_and_exit_codes(tmp_path: Path) -> None:
    """`lean --json FILE`: one SerialMessage per line (fileName, pos, endPos, severity
    information|warning|error, caption, data); exit 1 after an error; `-o` writes the .olean."""
    good = tmp_path / "Good.lean"
    good.write_text("theorem a : True := trivial\n#print axioms a\n")
    bad = tmp_path / "Bad.lean"
    bad.write_text("theorem b : True := bogus\n")
    olean = tmp_path / "build" / "Good.olean"

    def lean_run(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, FAKE_REPL, "lean", "--json", *extra, str(path)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    done = lean_run(good, "-R", str(tmp_path), "-o", str(olean))
    [message] = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and olean.is_file()
    assert set(message) == {"fileName", "pos", "endPos", "severity", "caption", "data"}
    assert message["severity"] == "information"
    failed = lean_run(bad, "-o", str(tmp_path / "build" / "Bad.olean"))
    assert failed.returncode == 1 and json.loads(failed.stdout)["severity"] == "error"
    assert not (tmp_path / "build" / "Bad.olean").exists()


def test_checker_interface(tmp_path: Path) -> None:
    """lean4checker: `CHECKER MODULE` with LEAN_PATH; silent exit 0 when the kernel accepts
    every constant; 'lean4checker found a problem in M' and 'uncaught exception: (kernel) ...'
    with exit 1 otherwise; 'Could not find any oleans for: M' for a module not on the path."""
    build = tmp_path / "build"
    env = {"LEAN_PATH": str(build), "PATH": "/usr/bin:/bin"}

    def compile_module(name: str, text: str) -> None:
        (tmp_path / f"{name}.lean").write_text(text)
        argv = [sys.executable, FAKE_REPL, "lean", "--json", "-R", str(tmp_path)]
        argv += ["-o", str(build / f"{name}.olean"), str(tmp_path / f"{name}.lean")]
        subprocess.run(argv, check=True, capture_output=True, env=env, timeout=30)

    def check(module: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, FAKE_REPL, "leanchecker", module]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)

    compile_module("Honest", "theorem a : True := trivial\n")
    compile_module("Forged", "#eval Lean.modifyEnv fun env => addDecl env `f False\n")
    ok, bad, missing = check("Honest"), check("Forged"), check("Nowhere")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    assert bad.returncode == 1
    assert bad.stderr.startswith(
        "lean4checker found a problem in Forged\nuncaught exception: (kernel)"
    )
    assert missing.returncode == 1
    assert "uncaught exception: Could not find any oleans for: Nowhere" in missing.stderr
