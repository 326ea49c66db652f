"""Start-up stays light: discovery imports every plugin's entry point on every ``rlv``
command, so a plugin module must leave its heavy dependencies to first use, and
``rlv --version`` must discover nothing (benchmarks/verify_startup.py times it)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sympy", "numpy", "scipy", "torch", "httpx", "bm25s", "math_verify", "transformers")


def imported_after(code: str) -> set[str]:
    """Top-level packages imported by a fresh interpreter that runs ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines()[-1].split())


def test_discovering_every_plugin_imports_no_heavy_dependency() -> None:
    loaded = imported_after(
        "from rl_verifier.discovery.plugins import get_plugins\n"
        "plugins = get_plugins()\n"
        "assert 'math' in plugins.registry.names() and 'pytest' in plugins.registry.names()"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_version_loads_no_plugin() -> None:
    loaded = imported_after(
        "import contextlib, io, sys\n"
        "sys.argv = ['rlv', '--version']\n"
        "from rl_verifier.cli.app import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main()"
    )
    assert not {m for m in loaded if m.startswith("rl_verifier_")}, sorted(loaded)
    assert not loaded & set(HEAVY)
