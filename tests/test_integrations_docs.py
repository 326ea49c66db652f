"""The Python API and trainer pages: their examples parse and import names that exist."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = [DOCS / "python-api.md", *sorted((DOCS / "integrations").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.M | re.S)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_examples_parse_and_import_what_exists(page: Path) -> None:
    for block in python_blocks(page):
        tree = ast.parse(block, str(page))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rl_verifier"):
                module = importlib.import_module(node.module or "")
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{page.name}: {node.module}.{alias.name}"


def test_every_trainer_has_a_page_with_an_example() -> None:
    index = (DOCS / "integrations" / "README.md").read_text()
    for module in ("trl", "verl", "tinker_cookbook", "prime_verifiers"):
        importlib.import_module(f"rl_verifier.integrations.{module}")
        assert f"rl_verifier.integrations.{module}" in index
    for name in ("trl.md", "verl.md", "tinker-cookbook.md", "prime-verifiers.md"):
        assert python_blocks(DOCS / "integrations" / name), name
