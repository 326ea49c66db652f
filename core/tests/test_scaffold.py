"""``rlv plugin new`` makes a package that installs, is discovered, passes its tests,
type-checks and lints as generated, and scores its sample data as its README says.

The package is installed into a throwaway virtual environment layered on this one,
so the test leaves the project's environment as it found it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rlv_layered_venv import LayeredVenv, shell_lines

from rl_verifier.base.errors import UserError
from rl_verifier.cli.app import cli
from rl_verifier.cli.plugin_new import PluginNames, create_plugin


@pytest.mark.slow
def test_generated_plugin_installs_runs_its_readme_and_passes_checks(tmp_path: Path) -> None:
    package = create_plugin("word-hit", tmp_path / "rl-verifier-word-hit")
    venv = LayeredVenv(tmp_path / "venv")
    venv.install(package)

    listing = venv.shell("rlv plugins --json", cwd=package)
    plugins = {p["name"]: p for p in json.loads(listing.stdout)}
    assert plugins["word_hit"]["verifiers"] == ["word_hit"], listing.stderr
    assert plugins["word_hit"]["distribution"] == "rl-verifier-word-hit"

    readme = (package / "README.md").read_text()
    [verify] = shell_lines(readme, "rlv verify")
    scored = venv.shell(verify, cwd=package)
    assert scored.returncode == 0, scored.stderr[-3000:]
    rows = [json.loads(line) for line in (package / "scores.jsonl").read_text().splitlines()]
    got = sorted((r["task_id"], r["sample_index"], r["status"], r["reward"]) for r in rows)
    assert got == [
        ("fruit", 0, "ok", 0.0),
        ("fruit", 1, "ok", 1.0),
        ("sky", 0, "ok", 1.0),
        ("sky", 1, "invalid", 0.0),
    ]
    promise = "reward 1 (`ok`), status `invalid` (no `<answer>` tag), reward 0 (`ok`) and reward 1"
    assert promise in " ".join(readme.split())

    tests = venv.run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=package)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout and "failed" not in tests.stdout
    venv.check_types_and_lint(package)


def test_hyphenated_name_gives_pip_import_and_verifier_names(tmp_path: Path) -> None:
    names = PluginNames.parse("json-schema")
    assert (names.dist, names.module, names.name) == (
        "rl-verifier-json-schema",
        "rl_verifier_json_schema",
        "json_schema",
    )
    assert PluginNames.parse("rl-verifier-json_schema") == names
    result = CliRunner().invoke(cli, ["plugin", "new", "json-schema", "--dir", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    pyproject = (tmp_path / "p" / "pyproject.toml").read_text()
    assert 'name = "rl-verifier-json-schema"' in pyproject
    assert 'json_schema = "rl_verifier_json_schema.plugin"' in pyproject
    assert (tmp_path / "p" / "src" / "rl_verifier_json_schema" / "verifier.py").is_file()
    assert "`-` means minus" in (tmp_path / "p" / "README.md").read_text()


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("format", "'format' is a built-in verifier"),
        ("exact-match", "'exact_match' is a built-in verifier"),
        ("calibration", "verifier 'calibration' comes from plugin 'calibration'"),
        ("pytest", "verifier 'pytest' comes from plugin 'pytest'"),
        ("sandbox", "an installed plugin is named 'sandbox'"),
        ("search-env", "an installed plugin is named 'search_env'"),
    ],
)
def test_refuses_names_taken_by_the_core_or_installed_plugins(
    tmp_path: Path, name: str, reason: str
) -> None:
    with pytest.raises(UserError, match="choose another name") as caught:
        create_plugin(name, tmp_path / "p")
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "p").exists()


def test_refuses_bad_names_and_non_empty_directories(tmp_path: Path) -> None:
    for bad in ["Bad-Name", "json--schema", "-json", "json-", "9lives", "a b"]:
        with pytest.raises(UserError, match="must start with a lowercase letter"):
            create_plugin(bad, tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not an empty directory"):
        create_plugin("ok_name", tmp_path / "full")
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
