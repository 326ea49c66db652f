"""What a Lean verdict depends on besides the settings: the Lake project's toolchain, its
pinned dependencies (Mathlib, the REPL) and its own Lean files, read as file contents.

Built dependencies (``.lake/``) are not read: the manifest pins their revisions. Without a
project (a REPL found on PATH) nothing names the toolchain or library a proof is checked
against, so such verdicts are not cached.
"""

from __future__ import annotations

import os
from pathlib import Path

from rl_verifier import files_digest

PINS = ("lean-toolchain", "lake-manifest.json", "lakefile.lean", "lakefile.toml")
BUILT = frozenset({".lake", "lake-packages", "build"})  # hidden folders are skipped too


def project_files(root: Path) -> list[Path]:
    """The pin files and the project's own ``.lean`` files, outside its build folders."""
    found = {root / name for name in PINS if (root / name).is_file()}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in BUILT and not d.startswith(".")]
        found.update(Path(folder, name) for name in files if name.endswith(".lean"))
    return sorted(found)


def project_digest(project: str) -> str:
    """One digest of the project's pins and sources, each named by its path inside it."""
    root = Path(project)
    return files_digest(project_files(root), root)
