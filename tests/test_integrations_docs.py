"""The Python API and trainer pages: their examples parse and import names that exist, and
the ones that need no trainer run or model server run as written."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
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
    for module in ("trl", "verl", "verl_reward_loop", "tinker_cookbook", "prime_verifiers"):
        importlib.import_module(f"rl_verifier.integrations.{module}")
        assert f"rl_verifier.integrations.{module}" in index
    for name in ("trl.md", "verl.md", "tinker-cookbook.md", "prime-verifiers.md"):
        assert python_blocks(DOCS / "integrations" / name), name


def documented_output(block: str) -> list[str]:
    """The comment lines that end a block: what it prints (``# 0 ok 1.0 {...}``)."""
    lines = block.rstrip().splitlines()
    tail: list[str] = []
    while lines and lines[-1].startswith("# "):
        tail.insert(0, lines.pop()[2:])
    return tail


RUN_AS_WRITTEN = [
    "python-api.md",
    "integrations/verl.md",
    "integrations/prime-verifiers.md",
    "integrations/trl.md",
]
# Run as written against a local `rlv serve` (the page starts one on port 8000 first; the
# test starts one on a free port and puts its address where the page says 8000).
RUN_AGAINST_SERVE = ["integrations/tinker-cookbook.md"]
PAGE_SERVER = "http://127.0.0.1:8000"
PAGE_LOG = "/tmp/cookbook-calibration"  # the cookbook asks before it reuses a log folder


def test_every_page_with_python_examples_is_run_or_says_why_not() -> None:
    pages = [p for p in PAGES if python_blocks(p)]
    names = {str(p.relative_to(DOCS)) for p in pages}
    assert names == set(RUN_AS_WRITTEN) | set(RUN_AGAINST_SERVE)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param("python-api.md", marks=pytest.mark.requires("bwrap")),  # sandboxed pytest
        *RUN_AS_WRITTEN[1:],
    ],
)
def test_examples_run_as_written(name: str, tmp_path: Path) -> None:
    run_page(name, python_blocks(DOCS / name), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUN_AGAINST_SERVE)
def test_examples_run_as_written_against_rlv_serve(name: str, tmp_path: Path) -> None:
    from rl_verifier_server.launch import LocalServer

    blocks = python_blocks(DOCS / name)
    assert any(PAGE_SERVER in b for b in blocks), f"{name}: no example talks to {PAGE_SERVER}"
    with LocalServer(tmp_path / "serve", log_path=tmp_path / "serve.log") as server:
        log = str(tmp_path / "cookbook-log")
        mine = [b.replace(PAGE_SERVER, server.url).replace(PAGE_LOG, log) for b in blocks]
        run_page(name, mine, tmp_path)


def run_page(name: str, blocks: list[str], cwd: Path) -> None:
    """Run a page's examples as one program in ``cwd``; it must print what the page says."""
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=cwd,  # the verl example writes train.parquet, the trl one grpo-out/
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.splitlines()
    for block in blocks:
        for line in documented_output(block):
            assert line in printed, f"{name} documents {line!r}; the example printed {printed}"
