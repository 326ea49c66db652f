"""A throwaway virtual environment layered on the project's, for installing a package.

Packages installed into it (editable, offline) are seen only there; everything the
project's environment has (rl-verifier, pytest, mypy, ruff, hatchling) is seen too.
``bin/rlv`` runs the CLI with the layered interpreter, as the console script would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path


class LayeredVenv:
    def __init__(self, root: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
        self.bin = root / "bin"
        self.python = self.bin / "python"
        site = self.run("-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        parent = sysconfig.get_paths()["purelib"]
        Path(site.stdout.strip(), "_parent_env.pth").write_text(
            f"import site; site.addsitedir({parent!r})\n"
        )
        rlv = self.bin / "rlv"
        rlv.write_text(f"#!{self.python}\nfrom rl_verifier.cli.app import main\n\nmain()\n")
        rlv.chmod(0o755)

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` with the layered interpreter."""
        return subprocess.run(
            [str(self.python), *args], capture_output=True, text=True, cwd=cwd, timeout=300
        )

    def shell(self, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """A shell command line as a user types it, with this venv's bin first on PATH."""
        env = {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        return subprocess.run(
            ["bash", "-c", line], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
        )

    def install(self, package: Path) -> None:
        """``pip install -e PACKAGE``, offline: its dependencies come from the parent."""
        done = self.run(
            "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", str(package)
        )
        assert done.returncode == 0, done.stderr[-3000:]

    def check_types_and_lint(self, package: Path) -> None:
        """``mypy`` and ``ruff check .`` with the package's own settings must pass."""
        mypy = self.run(
            "-m", "mypy", "--strict", "--cache-dir", str(package / ".mypy_cache"), cwd=package
        )
        assert mypy.returncode == 0, mypy.stdout[-3000:] + mypy.stderr[-1000:]
        ruff = self.run("-m", "ruff", "check", "--no-cache", ".", cwd=package)
        assert ruff.returncode == 0, ruff.stdout[-3000:] + ruff.stderr[-1000:]


def shell_lines(markdown: str, command: str) -> list[str]:
    """Lines of ```sh blocks that start with ``command`` (continuations joined)."""
    lines = []
    for block in re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", markdown, re.M | re.S):
        joined = block.replace("\\\n", " ")
        lines += [line.strip() for line in joined.splitlines() if line.strip().startswith(command)]
    return lines
