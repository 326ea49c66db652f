"""Lean runs in the bubblewrap sandbox: what the REPL can see, and how it is found in a Lake
project (fake `lake`, fake project with a symlinked package, fake REPL binary)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from lean_helpers import FAKE_REPL, fake_verifier, lean, run_all, task

from rl_verifier import Status
from rl_verifier_lean import isolation
from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.isolation import choose_sandbox, sandbox_reason
from rl_verifier_lean.locate import lake_env, minimal_paths, repl_launch
from rl_verifier_lean.procs import children_map
from rl_verifier_sandbox.linux import cgroups
from rl_verifier_sandbox.linux.slots import pids_of_uid

IS_ROOT = os.geteuid() == 0
needs_bwrap = pytest.mark.skipif(
    sandbox_reason("auto")[0] != "bwrap", reason=f"no bwrap: {sandbox_reason('auto')[1]}"
)
CGROUPS = cgroups.host_cgroups()
needs_cgroups = pytest.mark.skipif(
    CGROUPS is None or not CGROUPS.has("memory"),
    reason=f"no job cgroups here: {cgroups.unavailable_reason()}",
)


def job_cgroup(pid: int) -> tuple[str, int] | None:
    """(directory, memory limit) of the sandbox job cgroup holding host process ``pid``;
    None when it is in none (or the host makes no job cgroups)."""
    if CGROUPS is None or not CGROUPS.has("memory"):
        return None
    paths = cgroups.parse_self_cgroup(Path(f"/proc/{pid}/cgroup").read_text())
    name = paths.get("memory", paths.get("", "")).rsplit("/", 1)[-1]
    if not name.startswith(cgroups.PREFIX):
        return None
    directory = os.path.join(CGROUPS.parents["memory"], name)
    limit = "memory.max" if CGROUPS.version == "v2" else "memory.limit_in_bytes"
    return directory, int(Path(directory, limit).read_text())


def probe(verifier_config: dict[str, Any], paths: list[str]) -> tuple[dict[str, Any], Any]:
    """What a REPL started by the verifier sees, and (as ``cgroup``) the job cgroup it was in;
    also returns the verifier (closed)."""
    verifier = fake_verifier(**verifier_config)

    async def go() -> dict[str, Any]:
        repl = await verifier.pool().acquire()
        try:
            base = await repl.send({"cmd": "import Mathlib"})
            answer = await repl.send({"cmd": f"FAKE_PROBE {json.dumps(paths)}", "env": base["env"]})
            cgroup = job_cgroup(repl.proc.pid)
        finally:
            verifier.pool().release(repl, healthy=True)
            await verifier.close()
        seen: dict[str, Any] = json.loads(answer["messages"][0]["data"])
        seen["isolation"] = repl.isolation
        seen["cgroup"] = cgroup
        return seen

    return asyncio.run(go()), verifier


@needs_bwrap
def test_sandboxed_repl_sees_only_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tml-secret")
    secret = tmp_path / "secret.txt"
    secret.write_text("host file")
    secret.chmod(0o644)
    extra = tmp_path / "extra.txt"
    extra.write_text("shown")
    extra.chmod(0o644)
    seen, _ = probe({"sandbox_paths": [str(extra)]}, [FAKE_REPL, str(secret), str(extra)])
    assert seen["isolation"] == "bwrap"
    assert seen["readable"] == {FAKE_REPL: True, str(secret): False, str(extra): True}
    assert seen["interfaces"] == ["lo"]  # no network namespace shared with the host
    assert "TINKER_API_KEY" not in seen["env"]
    if IS_ROOT:
        assert seen["uid"] >= 60000


@needs_bwrap
def test_closing_the_pool_kills_the_sandbox_and_frees_its_uid() -> None:
    seen, _ = probe({}, [])
    if IS_ROOT:
        assert pids_of_uid(seen["uid"]) == []


def test_sandbox_none_runs_a_plain_process() -> None:
    seen, _ = probe({"sandbox": "none"}, [FAKE_REPL])
    assert seen["isolation"] == "none" and seen["uid"] == os.getuid()
    assert seen["cgroup"] is None


@needs_bwrap
@needs_cgroups
def test_each_sandboxed_repl_has_its_own_cgroup_until_closed() -> None:
    """Every process of a sandboxed REPL (bwrap and the REPL below it) is in the REPL's own
    cgroup; closing the REPL removes it."""
    verifier = fake_verifier(pool_size=2)

    async def go() -> list[tuple[str, list[int], list[str]]]:
        pool = verifier.pool()
        repls = [await pool.acquire(), await pool.acquire()]
        found = []
        try:
            for repl in repls:
                await repl.send({"cmd": "import Mathlib"})  # the REPL is up
            kids = children_map()
            for repl in repls:
                cgroup = job_cgroup(repl.proc.pid)
                assert cgroup is not None
                tree, todo = [], [repl.proc.pid]
                while todo:
                    tree.append(todo.pop())
                    todo += kids.get(tree[-1], [])
                members = Path(cgroup[0], "cgroup.procs").read_text().split()
                found.append((cgroup[0], tree, members))
        finally:
            for repl in repls:
                pool.release(repl, healthy=True)
            await verifier.close()
        return found

    (first, tree_a, members_a), (second, tree_b, members_b) = asyncio.run(go())
    assert first != second
    for tree, members in ((tree_a, members_a), (tree_b, members_b)):
        assert len(tree) >= 2 and {str(pid) for pid in tree} <= set(members)
    assert not os.path.exists(first) and not os.path.exists(second)


def test_required_sandbox_missing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_probe", lambda mode: "bubblewrap not found (bwrap)")
    [verdict] = run_all(fake_verifier(sandbox="bwrap"), [(task(), lean("by simp"))])
    assert verdict.status is Status.ERROR and "bubblewrap not found" in (verdict.error or "")


def test_auto_without_bwrap_warns_and_runs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(isolation, "_probe", lambda mode: "bwrap missing for this test")
    with caplog.at_level(logging.WARNING):
        assert choose_sandbox("auto") is None
    assert "WITHOUT a sandbox" in caplog.text and "bwrap missing for this test" in caplog.text
    [verdict] = run_all(fake_verifier(), [(task(), lean("by simp"))])
    assert verdict.status is Status.OK and verdict.reward == 1.0


def test_minimal_paths(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".lake" / "packages").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    link = tmp_path / "proj" / ".lake" / "packages" / "mathlib"
    link.symlink_to(tmp_path / "shared")
    inner = tmp_path / "proj" / ".lake"
    got = minimal_paths(
        [str(tmp_path / "proj"), str(inner), str(link), "/usr/lib", "relative", "/nope/x"]
    )
    # the symlinked package is shown at its real place (the link leads there); the rest is
    # covered by the project
    assert got == sorted([str(tmp_path / "proj"), str(tmp_path / "shared")])


# A Lake project as `lake` lays it out, with mathlib symlinked from elsewhere.


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "leanproj"
    shared = tmp_path / "shared" / "mathlib"
    (shared / ".lake" / "build" / "lib" / "lean" / "Mathlib").mkdir(parents=True)
    (shared / ".lake" / "build" / "lib" / "lean" / "Mathlib.olean").write_bytes(b"olean")
    packages = project / ".lake" / "packages"
    packages.mkdir(parents=True)
    (packages / "mathlib").symlink_to(shared)
    repl_bin = packages / "REPL" / ".lake" / "build" / "bin" / "repl"
    repl_bin.parent.mkdir(parents=True)
    repl_bin.write_text("#!/usr/bin/python3\n" + Path(FAKE_REPL).read_text())
    repl_bin.chmod(0o755)
    sysroot = tmp_path / "toolchain"
    (sysroot / "lib" / "lean").mkdir(parents=True)
    (sysroot / "lib" / "lean" / "Init.olean").write_bytes(b"olean")
    (sysroot / "bin").mkdir()
    for tool in ("lean", "leanchecker"):  # the fake toolchain picks its part by program name
        binary = sysroot / "bin" / tool
        binary.write_text("#!/usr/bin/python3\n" + Path(FAKE_REPL).read_text())
        binary.chmod(0o755)
    fake_lean = sysroot / "bin" / "lean"
    lean_path = ":".join(
        [str(sysroot / "lib" / "lean"), str(packages / "mathlib/.lake/build/lib/lean")]
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "lean").symlink_to(fake_lean)
    lake = bindir / "lake"
    lake.write_text(
        "#!/bin/sh\n"
        '[ "$1" = env ] || { echo "fake lake: only env" >&2; exit 2; }\nshift\n'
        f'exec env LEAN_PATH="{lean_path}" LEAN_SYSROOT="{sysroot}" '
        'LAKE=fake SECRET_TOKEN=do-not-leak "$@"\n'
    )
    lake.chmod(lake.stat().st_mode | stat.S_IXUSR)
    return project, bindir


@pytest.fixture
def lake_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project, bindir = make_project(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.delenv("RLV_LEAN_PROJECT", raising=False)
    return project


def test_project_launch_uses_the_built_repl_and_lake_variables(lake_project: Path) -> None:
    launch = repl_launch(LeanConfig(project=str(lake_project)), sandboxed=True)
    assert launch.argv[0].endswith("packages/REPL/.lake/build/bin/repl")
    assert {"LEAN_PATH", "LEAN_SYSROOT", "LAKE", "PATH"} <= set(launch.env)
    assert "SECRET_TOKEN" not in launch.env  # only Lean's, Lake's and elan's variables pass
    assert str(lake_project) in launch.paths
    mathlib_lib = lake_project / ".lake/packages/mathlib/.lake/build/lib/lean"
    assert os.path.realpath(mathlib_lib) in launch.paths  # the symlinked package's real place
    assert lake_env.cache_info().currsize >= 1


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_proofs_check_in_a_lake_project(lake_project: Path, sandbox: str) -> None:
    verifier = fake_verifier(repl_command=None, project=str(lake_project), sandbox=sandbox)
    good, bad = run_all(verifier, [(task(), lean("by simp")), (task(), lean("by exact bogus"))])
    assert (good.status, good.reward) == (Status.OK, 1.0), good
    assert (bad.status, bad.reward, bad.info["reason"]) == (Status.OK, 0.0, "lean_error")


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_file_backend_in_a_lake_project(lake_project: Path, sandbox: str) -> None:
    """`LEAN_SYSROOT/bin/lean --json` with Lake's variables, and the toolchain's `leanchecker`
    replaying the compiled answer (on by default with this backend)."""
    verifier = fake_verifier(
        repl_command=None,
        project=str(lake_project),
        sandbox=sandbox,
        backend="file",
        static_screen=False,
    )
    forged = (
        "#eval Lean.modifyEnv fun env => addDecl env `forged False\n"
        "theorem my_thm (n : ℕ) : n + 0 = n := forged.elim"
    )
    items = [(task(), lean("by simp")), (task(), lean("by exact bogus")), (task(), lean(forged))]
    good, bad, caught = run_all(verifier, items)
    assert (good.status, good.reward) == (Status.OK, 1.0), good
    assert (bad.status, bad.reward, bad.info["reason"]) == (Status.OK, 0.0, "lean_error")
    assert (caught.reward, caught.info["reason"]) == (0.0, "replay"), caught
    assert "lean4checker found a problem in RlvCandidate" in caught.info["detail"]


@needs_bwrap
def test_missing_olean_is_a_header_error(lake_project: Path) -> None:
    olean = lake_project.parent / "shared/mathlib/.lake/build/lib/lean/Mathlib.olean"
    olean.unlink()
    verifier = fake_verifier(repl_command=None, project=str(lake_project))
    [verdict] = run_all(verifier, [(task(), lean("by simp"))])
    assert verdict.status is Status.ERROR
    assert "unknown module prefix 'Mathlib'" in (verdict.error or "")


@pytest.mark.requires("bwrap")
def test_unbuilt_repl_says_how_to_build_it(lake_project: Path) -> None:
    shutil.rmtree(lake_project / ".lake/packages/REPL")
    verifier = fake_verifier(repl_command=None, project=str(lake_project), sandbox="bwrap")
    [verdict] = run_all(verifier, [(task(), lean("by simp"))])
    assert verdict.status is Status.ERROR
    assert "lake build repl" in (verdict.error or "")
    assert verifier.pool().started == 0  # refused before any process was started


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_memory_cap_is_on_top_of_the_mapped_library(lake_project: Path, sandbox: str) -> None:
    """Lean maps every imported .olean: the cap must bound Lean's memory, not Mathlib's size."""
    olean = lake_project.parent / "shared/mathlib/.lake/build/lib/lean/Mathlib.olean"
    with open(olean, "r+b") as fh:
        fh.truncate(3 << 30)  # a sparse 3 GiB library
    config = {"repl_command": None, "project": str(lake_project), "sandbox": sandbox}
    seen, _ = probe({**config, "memory_mb": 512}, [])
    library = (3 << 30) + len(b"olean")  # Mathlib.olean + Init.olean
    cap = (512 << 20) + library
    if seen["cgroup"] is None:  # unsandboxed, or a sandbox without cgroups: RLIMIT_AS
        assert seen["address_space"] == cap
    else:  # the REPL's own cgroup limits resident memory (in whole pages); no RLIMIT_AS
        page = os.sysconf("SC_PAGE_SIZE")
        assert seen["cgroup"][1] == cap // page * page
        assert seen["address_space"] == resource.getrlimit(resource.RLIMIT_AS)[0]


def test_doctor_finds_the_toolchains_replay_checker(lake_project: Path) -> None:
    """With backend 'file' (replay on by default) the checker is needed to be ready."""
    from rl_verifier_lean.doctor import run_doctor

    config = LeanConfig(project=str(lake_project), backend="file")
    report = run_doctor(config)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"], report
    assert checks["replay"]["ok"] and checks["replay"]["detail"].endswith("/bin/leanchecker")
    Path(checks["replay"]["detail"]).unlink()
    missing = run_doctor(config)
    replay = {c["name"]: c for c in missing["checks"]}["replay"]
    assert not missing["ok"] and not replay["ok"] and "lean4checker" in replay["fix"]
