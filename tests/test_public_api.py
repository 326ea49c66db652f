"""Plugins use only public names: ``rl_verifier`` (and its test kit and training API) and
``rl_verifier_sandbox``'s package namespace, never the modules behind them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rl_verifier
import rl_verifier.train
import rl_verifier_sandbox

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {
    "rl_verifier": set(rl_verifier.__all__),
    "rl_verifier.testing": None,  # the test kit, public as a whole
    "rl_verifier.train": set(rl_verifier.train.__all__),
    "rl_verifier_sandbox": set(rl_verifier_sandbox.__all__),
}
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "src").is_dir())


def imports_of(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of a core or sandbox module in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module, names = node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.append((node.lineno, alias.name, []))
            continue
        else:
            continue
        found.append((node.lineno, module, names))
    return [f for f in found if f[1].split(".")[0] in ("rl_verifier", "rl_verifier_sandbox")]


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_imports_only_public_names(plugin: Path) -> None:
    problems = []
    for path in sorted((plugin / "src").rglob("*.py")):
        for line, module, names in imports_of(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module not in PUBLIC_MODULES:
                problems.append(f"{where}: imports private module {module}")
                continue
            public = PUBLIC_MODULES[module]
            private = [n for n in names if public is not None and n not in public]
            if private:
                problems.append(f"{where}: {module} does not export {', '.join(private)}")
    assert not problems, "\n".join(problems)


def test_every_public_name_exists() -> None:
    for module in (rl_verifier, rl_verifier.train, rl_verifier_sandbox):
        for name in module.__all__:
            assert getattr(module, name, None) is not None, f"{module.__name__}.{name}"
