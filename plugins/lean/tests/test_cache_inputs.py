"""What the verdict cache keys a Lean verdict on besides the settings: the Lake project's
toolchain, pinned dependencies and own sources (by content); without a project nothing
names the toolchain, and verdicts are not cached."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lean_helpers import FAKE_CONFIG, lean, task

from rl_verifier import Completion, InlineExecutor, Reward, Sample, VerdictCache, score_batch
from rl_verifier_lean.verifier import LeanVerifier


@pytest.fixture(autouse=True)
def no_project_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLV_LEAN_PROJECT", raising=False)


def make_project(root: Path) -> Path:
    (root / ".lake" / "packages" / "mathlib").mkdir(parents=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.9.0\n")
    (root / "lake-manifest.json").write_text('{"packages": [{"name": "mathlib", "rev": "a1"}]}')
    (root / "Defs.lean").write_text("def two : Nat := 2\n")
    (root / ".lake" / "packages" / "mathlib" / "Big.lean").write_text("-- built, pinned\n")
    return root


def lean_verifier(project: Path, **overrides: object) -> LeanVerifier:
    return LeanVerifier({**FAKE_CONFIG, "project": str(project), "sandbox": "none", **overrides})


def test_the_project_content_not_its_path_is_in_the_key(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj")
    first = lean_verifier(project)
    assert first.cacheable and first.config_hash == lean_verifier(project).config_hash
    (project / ".lake" / "packages" / "mathlib" / "Big.lean").write_text("-- rebuilt\n")
    assert lean_verifier(project).config_hash == first.config_hash  # build folders: not read
    hashes = {first.config_hash}
    for name, text in [
        ("lake-manifest.json", '{"packages": [{"name": "mathlib", "rev": "b2"}]}'),
        ("lean-toolchain", "leanprover/lean4:v4.10.0\n"),
        ("Defs.lean", "def two : Nat := 3\n"),
        ("Extra.lean", "def three : Nat := 3\n"),
    ]:
        (project / name).write_text(text)
        hashes.add(lean_verifier(project).config_hash)
    assert len(hashes) == 5


def test_without_a_project_lean_verdicts_are_not_cached() -> None:
    verifier = LeanVerifier(FAKE_CONFIG)
    assert verifier.deterministic and not verifier.cacheable


def test_a_changed_toolchain_is_judged_again(tmp_path: Path) -> None:
    """Through the scoring engine and the fake REPL: the same proof is reused while the
    project is unchanged and checked again once its toolchain changes."""
    project = make_project(tmp_path / "proj")
    cache = VerdictCache()
    proof = lean("by simp")

    def cached() -> bool:
        verifier = lean_verifier(project)
        sample = Sample(task(), Completion(task_id="t", completion=proof), 0)

        async def run() -> bool:
            jobs = [(Reward.of(verifier, "0"), sample)]
            [score] = (await score_batch(jobs, InlineExecutor(), cache=cache)).scores
            await verifier.close()
            assert score.status.value == "ok", score.error
            return bool(score.info.get("cached"))

        return asyncio.run(run())

    assert [cached(), cached()] == [False, True]
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.10.0\n")
    assert [cached(), cached()] == [False, True]
