"""Shared helpers: fake installed plugins made of a module and a dist-info folder."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from rlv_fake_plugins import MakePlugin


@pytest.fixture
def make_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePlugin]:
    """Install a plugin on sys.path: ``make_plugin("name", source)``."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def make(name: str, source: str, dist: str | None = None) -> Path:
        dist = dist or f"rl-verifier-{name.replace('_', '-')}"
        module = f"rlv_fake_{name}"
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        info = site / f"{dist.replace('-', '_')}-0.3.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3.1\n")
        (info / "entry_points.txt").write_text(f"[rl_verifier]\n{name} = {module}\n")
        return site

    yield make
    for module in [m for m in sys.modules if m.startswith("rlv_fake_")]:
        del sys.modules[module]  # the next test's plugin of the same name is a new module
