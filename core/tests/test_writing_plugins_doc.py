"""docs/writing-plugins.md is enough to write a plugin: the package its file blocks
describe installs, passes its own tests, ``mypy --strict`` and ruff, and its
``rlv verify`` line gives the rewards the page's table promises. The page's other
Python examples type-check and import against it.

A file block is a fenced block right after a line ``**`path/in/package`**``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rlv_layered_venv import LayeredVenv, shell_lines

PAGE = Path(__file__).resolve().parents[2] / "docs" / "writing-plugins.md"
FILE_BLOCK = re.compile(r"^\*\*`([^`]+)`\*\*\n```[\w-]*\n(.*?)^```$", re.M | re.S)
FENCED = re.compile(r"^```([\w-]*)\n(.*?)^```$", re.M | re.S)
TABLE_ROW = re.compile(r"^\| (\w+) \| (\d+) \| (\w+) \| ([\d.]+) \|", re.M)


def page_files(markdown: str) -> dict[str, str]:
    files = dict(FILE_BLOCK.findall(markdown))
    assert len(files) == len(FILE_BLOCK.findall(markdown)), "a path is given twice"
    return files


def tree_paths(markdown: str) -> set[str]:
    """File paths drawn in the page's ``text`` tree block, relative to its root."""
    tree = next(body for lang, body in FENCED.findall(markdown) if "├──" in body)
    paths, stack = set(), []
    for line in tree.splitlines()[1:]:
        name = re.sub(r"^[│├└─\s]+", "", line)
        depth = (len(line) - len(name)) // 4 - 1
        stack[depth:] = [name.rstrip("/")]
        if not name.endswith("/"):
            paths.add("/".join(stack))
    return paths


def snippets(markdown: str) -> list[str]:
    """Python examples on the page that are not files of the package."""
    labelled = set(page_files(markdown).values())
    return [
        body for lang, body in FENCED.findall(markdown) if lang == "python" and body not in labelled
    ]


@pytest.fixture(scope="module")
def markdown() -> str:
    return PAGE.read_text()


def test_page_shows_every_file_of_its_tree(markdown: str) -> None:
    assert set(page_files(markdown)) == tree_paths(markdown)
    assert snippets(markdown), "the page's other examples are checked too"


@pytest.mark.slow
def test_page_builds_a_plugin_that_installs_runs_and_checks(markdown: str, tmp_path: Path) -> None:
    package = tmp_path / "rl-verifier-keywords"
    for relative, text in page_files(markdown).items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    venv = LayeredVenv(tmp_path / "venv")
    venv.install(package)

    listing = venv.shell("rlv plugins --json", cwd=package)
    plugins = {p["name"]: p for p in json.loads(listing.stdout)}
    assert plugins["keywords"]["verifiers"] == ["keywords"], listing.stderr

    [verify] = shell_lines(markdown, "rlv verify")
    scored = venv.shell(verify, cwd=package)
    assert scored.returncode == 0, scored.stderr[-3000:]
    assert re.search(r"all_found\s+0\.666", scored.stdout), scored.stdout
    promised = [(t, int(i), s, float(r)) for t, i, s, r in TABLE_ROW.findall(markdown)]
    assert len(promised) == 4
    assert rewards(package / "scores.jsonl") == sorted(promised)

    sensitive = venv.shell(verify + " --config case_sensitive=true", cwd=package)
    assert sensitive.returncode == 0, sensitive.stderr[-3000:]
    assert [r[3] for r in rewards(package / "scores.jsonl")] == pytest.approx([0.6, 0.0, 0.6, 0.6])

    tests = venv.run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=package)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout and "failed" not in tests.stdout

    for number, body in enumerate(snippets(markdown)):
        (package / "examples").mkdir(exist_ok=True)
        (package / "examples" / f"example_{number}.py").write_text(body)
    venv.check_types_and_lint(package)
    typed = venv.run(
        "-m", "mypy", "--strict", "--cache-dir", ".mypy_cache", "examples", cwd=package
    )
    assert typed.returncode == 0, typed.stdout[-3000:]
    for example in sorted((package / "examples").glob("*.py")):
        imported = venv.run(str(example), cwd=package)
        assert imported.returncode == 0, imported.stderr[-2000:]


def rewards(path: Path) -> list[tuple[str, int, str, float]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(
        (r["task_id"], r["sample_index"], r["status"], round(r["reward"], 9)) for r in rows
    )
