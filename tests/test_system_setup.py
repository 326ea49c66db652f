"""A fresh machine needs only ``make test``: the Makefile installs the Debian packages
(tools/system-deps.sh), CI runs nothing else, and tests that need a component the set-up
could not provide are skipped with one reason, not errors by the dozen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "system-deps.sh"
# What the script itself runs; everything else it looks for is left off PATH.
TOOLS = ("bash", "grep", "sort")
SECCOMP = "\tlibseccomp.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libseccomp.so.2"


def fake_path(folder: Path, uid: int, commands: tuple[str, ...] = (), libraries: str = "") -> str:
    """A PATH with the script's own tools, an ``id`` answering ``uid``, an ``ldconfig -p``
    listing ``libraries``, and ``commands`` as stand-ins that do nothing."""
    folder.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    (folder / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (folder / "ldconfig").write_text(f"#!/bin/sh\nprintf '%s\\n' '{libraries}'\n")
    for command in commands:
        (folder / command).write_text("#!/bin/sh\n")
    for path in folder.iterdir():
        if not path.is_symlink():
            path.chmod(0o755)
    return str(folder)


def system_deps(path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shutil.which("bash") or "bash", str(SCRIPT)],
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_not_root_and_packages_missing_is_one_line_naming_the_command(tmp_path: Path) -> None:
    done = system_deps(fake_path(tmp_path / "bin", uid=1000))
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "run: sudo apt-get install -y " in lines[0]
    packages = lines[0].split("install -y ", 1)[1].split()
    assert {"bubblewrap", "chromium", "chromium-driver", "libseccomp2"} <= set(packages)
    assert packages == sorted(set(packages))  # each once (util-linux gives three commands)
    assert done.stdout == ""


def test_nothing_to_do_when_every_command_is_there(tmp_path: Path) -> None:
    provided = ("bwrap", "chromium", "chromedriver", "ip", "unshare", "setpriv", "prlimit",
                "dockerd", "debootstrap")  # fmt: skip
    path = fake_path(tmp_path / "bin", uid=1000, commands=provided, libraries=SECCOMP)
    done = system_deps(path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def make_dry_run(target: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_test_and_make_demo_install_system_packages_first() -> None:
    for target, last in (("test", "pytest -q"), ("test-slow", "pytest -q"), ("demo", "rlv train")):
        commands = make_dry_run(target)
        setup = commands.index("bash tools/system-deps.sh")
        run = next(i for i, line in enumerate(commands) if last in line)
        assert setup < run, commands


def test_ci_runs_make_test_then_the_slow_lane_and_nothing_else() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    steps = [
        line.strip()
        for line in script.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert steps[-4:] == [
        "status=0",
        "make test || status=$?",
        "make test-slow || status=$?",
        'exit "$status"',
    ]
    assert all(s.startswith(("set ", "cd ")) for s in steps[:-4]), steps


FOUR_TESTS = """
import pytest

@pytest.mark.requires("no-such-command-rlv")
@pytest.mark.parametrize("n", range(3))
def test_needs_it(n):
    raise AssertionError("must not run without the command")

@pytest.mark.requires("sh")
def test_has_it():
    pass
"""


def test_a_missing_component_is_one_skip_reason_not_errors(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")  # the repository's own
    (tmp_path / "test_needs.py").write_text(FOUR_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, done.stdout  # grouped: one line for the three tests
    assert skipped[0].startswith("SKIPPED [3]")
    assert "no-such-command-rlv is not installed here" in skipped[0]
    assert "1 passed, 3 skipped" in done.stdout


def test_every_marker_and_requirement_is_documented() -> None:
    """docs/testing.md names each marker the suite declares and each `requires` name."""
    import ast
    import tomllib

    tree = ast.parse((ROOT / "conftest.py").read_text())
    [found_by] = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "FOUND_BY"
    ]
    assert isinstance(found_by, ast.Dict)
    page = (ROOT / "docs" / "testing.md").read_text()
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    markers = [m.split(":", 1)[0] for m in ini["markers"]] + ["requires"]
    missing = [m for m in markers if f"mark.{m}" not in page]
    missing += [
        key.value
        for key in found_by.keys
        if isinstance(key, ast.Constant) and f'requires("{key.value}")' not in page
    ]
    assert not missing, missing
