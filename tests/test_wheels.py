"""Each distribution builds a wheel on its own, with its package and entry points."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ["core", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "plugins").iterdir())]


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_wheel_builds_alone(folder: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT / folder),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    package = "rl_verifier" if folder == "core" else f"rl_verifier_{Path(folder).name}"
    assert f"{package}/__init__.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    if folder == "core":
        assert "rlv = rl_verifier.cli:main" in text
    else:
        assert f"[rl_verifier]\n{Path(folder).name} = " in text
    assert not any("tests/" in n for n in names), "tests must not ship in the wheel"
