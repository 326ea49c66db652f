"""``Policy.readonly_paths``: host paths shown read-only at the same place, and nothing else
(bwrap, and docker where the engine runs on this host)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rl_verifier_sandbox.api import Job, Policy, Sandbox
from rl_verifier_sandbox.bwrap.backend import BwrapSandbox

from .conftest import COLD_BACKENDS, FIXTURE

IS_ROOT = os.geteuid() == 0


@pytest.fixture(params=COLD_BACKENDS)
def cold_sb(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(FIXTURE[request.param])
    return sandbox


def sh(script: str, *paths: str) -> Job:
    return Job(argv=("/bin/sh", "-c", script), policy=Policy(python=False, readonly_paths=paths))


@pytest.fixture
def private_home() -> Iterator[Path]:
    """A world-readable tree below a directory the sandbox uid cannot traverse (as /root/.elan
    is for a root install): the case that needs staging."""
    base = Path.home() / f".rlv-readonly-test-{os.getpid()}"
    (base / "toolchain" / "lib").mkdir(parents=True)
    (base / "toolchain" / "lib" / "Init.olean").write_text("OLEAN")
    (base / "toolchain" / "bin").mkdir()
    tool = base / "toolchain" / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho tool ran as $(id -u)\n")
    tool.chmod(0o755)
    yield base
    shutil.rmtree(base)


def test_private_host_dir_visible_read_only(cold_sb: Sandbox, private_home: Path) -> None:
    tree = private_home / "toolchain"
    if IS_ROOT:
        assert os.stat(Path.home()).st_mode & 0o001 == 0, "test assumes a private home"
    job = sh(
        f"cat {tree}/lib/Init.olean; echo; {tree}/bin/tool; touch {tree}/lib/x 2>/dev/null"
        " && echo WROTE || echo READONLY",
        str(tree),
    )
    r = cold_sb.run(job)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "OLEAN"
    assert lines[1].startswith("tool ran as ") and lines[1] != "tool ran as 0"
    assert lines[2] == "READONLY"
    assert not (tree / "lib" / "x").exists()


def test_only_named_paths_appear(cold_sb: Sandbox, tmp_path: Path) -> None:
    """A world-readable sibling of a named file, in a directory open to all, stays hidden."""
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    named, sibling = folder / "named.txt", folder / "sibling.txt"
    named.write_text("NAMED")
    sibling.write_text("SECRET")
    for path in (named, sibling):
        path.chmod(0o644)
    r = cold_sb.run(sh(f"cat {named}; cat {sibling}; ls {folder}", str(named)))
    assert r.stdout == b"NAMED" + b"named.txt\n" and b"SECRET" not in r.stdout


@pytest.mark.skipif(not IS_ROOT, reason="as non-root the sandbox runs as the file's owner")
def test_file_permissions_still_apply(cold_sb: Sandbox, private_home: Path) -> None:
    secret = private_home / "toolchain" / "lib" / "key"
    secret.write_text("KEY")
    secret.chmod(0o600)
    r = cold_sb.run(sh(f"cat {secret}", str(private_home / "toolchain")))
    assert b"KEY" not in r.stdout and r.exit_code != 0


def test_host_mount_table_untouched(sb: BwrapSandbox, private_home: Path) -> None:
    """bwrap's staging mounts live in a private namespace (docker's containers are mounts of
    the engine, made when a container starts, not per job)."""
    before = Path("/proc/self/mounts").read_text()
    assert sb.run(sh("true", str(private_home / "toolchain"))).exit_code == 0
    assert Path("/proc/self/mounts").read_text() == before


def test_bad_paths_are_job_faults(cold_sb: Sandbox) -> None:
    for path in ("relative/dir", "/does/not/exist"):
        r = cold_sb.run(sh("true", path))
        assert r.exit_code is None and b"readonly path" in r.stderr
