"""A site folder that installs the test verifier ``behaviour`` as a plugin, for tests
whose scoring runs in other processes (Ray actors, a trainer's own CLI)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
PLUGIN = """from rl_verifier import hookimpl
from rlv_test_verifiers import Behaviour


@hookimpl
def register_verifiers(register):
    register(Behaviour)
"""


def behaviour_site(folder: Path) -> Path:
    """``folder`` holding the plugin module and its dist-info (entry point)."""
    info = folder / "rlv_behaviour_plugin-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rlv-behaviour-plugin\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text("[rl_verifier]\nbehaviour = rlv_behaviour_plugin\n")
    (folder / "rlv_behaviour_plugin.py").write_text(PLUGIN)
    return folder


def env_with_behaviour(folder: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python processes find the ``behaviour`` plugin."""
    env = dict(os.environ if base is None else base)
    paths = [str(behaviour_site(folder)), str(SUPPORT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env
