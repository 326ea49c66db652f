"""``rlv plugin new`` makes a package that installs, is discovered and passes its tests.

The package is installed into a throwaway virtual environment layered on this one,
so the test leaves the project's environment as it found it."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rl_verifier.errors import UserError
from rl_verifier.scaffold import create_plugin


def layered_venv(root: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    Path(site, "_parent_env.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return python


def run(python: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_generated_plugin_installs_is_discovered_and_passes_its_tests(tmp_path: Path) -> None:
    package = create_plugin("word_hit", tmp_path / "rl-verifier-word-hit")
    python = layered_venv(tmp_path / "venv")
    install = run(
        python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", str(package)
    )
    assert install.returncode == 0, install.stderr[-2000:]

    listing = run(python, "-c", "from rl_verifier.cli import main; main()", "plugins", "--json")
    plugins = {p["name"]: p for p in json.loads(listing.stdout)}
    assert plugins["word_hit"]["verifiers"] == ["word_hit"], listing.stderr
    assert plugins["word_hit"]["distribution"] == "rl-verifier-word-hit"

    tests = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=package)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout and "failed" not in tests.stdout


def test_refuses_bad_names_and_non_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="must start with a lowercase letter"):
        create_plugin("Bad-Name", tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        create_plugin("ok_name", tmp_path / "full")
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
