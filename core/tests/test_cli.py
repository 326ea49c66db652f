"""The ``rlv`` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rlv_cli_helpers import assert_user_error, io_args, rlv, write_jsonl
from rlv_fake_plugins import GOOD_PLUGIN, MakePlugin


@pytest.fixture
def batch(tmp_path: Path) -> tuple[Path, Path]:
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {"id": "a", "prompt": "2+2", "verifier": "exact_match", "reference": {"answer": "4"}},
            {
                "id": "b",
                "prompt": "capital",
                "verifier": "exact_match",
                "reference": {"answers": ["Paris"]},
            },
        ],
    )
    completions = write_jsonl(
        tmp_path / "completions.jsonl",
        [
            {"task_id": "a", "completion": "<answer>4</answer>"},
            {"task_id": "b", "completion": "<answer>Rome</answer>"},
            {"task_id": "a", "completion": "<answer>5</answer>"},
        ],
    )
    return tasks, completions


def test_verify_writes_scores_joinable_by_sample_index(
    tmp_path: Path, batch: tuple[Path, Path]
) -> None:
    tasks, completions = batch
    out = tmp_path / "out" / "scores.jsonl"
    summary = tmp_path / "summary.json"
    result = rlv(
        "verify",
        *io_args(tasks, completions, out),
        "--summary-json",
        str(summary),
    )
    assert result.returncode == 0, result.stderr
    rows = {
        (r["task_id"], r["sample_index"]): r for r in map(json.loads, out.read_text().splitlines())
    }
    assert {k: r["reward"] for k, r in rows.items()} == {
        ("a", 0): 1.0,
        ("b", 0): 0.0,
        ("a", 1): 0.0,
    }
    assert all(
        r["status"] == "ok" and r["verifier"]["name"] == "exact_match" for r in rows.values()
    )
    figures = json.loads(summary.read_text())
    assert figures["count"] == 3 and figures["status"]["ok"] == 3
    assert figures["mean_reward"] == pytest.approx(1 / 3)
    assert "mean reward (judged)" in result.stdout and "0.3333" in result.stdout
    assert not list(out.parent.glob("*.partial"))


def test_zero_rewards_still_exit_zero(tmp_path: Path, batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    result = rlv(
        "verify",
        "--verifier",
        "format",
        "--config",
        "pattern=nothing-matches",
        *io_args(tasks, completions, tmp_path / "s.jsonl"),
    )
    assert result.returncode == 0, result.stderr


def test_malformed_jsonl_names_file_and_line(tmp_path: Path, batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    with completions.open("a") as handle:
        handle.write('{"task_id": "a", "completion": \n')
    out = tmp_path / "s.jsonl"
    result = rlv("verify", *io_args(tasks, completions, out))
    assert_user_error(result, f"{completions}:4", "malformed JSON")
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"task_id": "zzz", "completion": "x"}, "task_id 'zzz' is not in the tasks file"),
        ({"task_id": "a"}, "field 'completion'"),
        (
            {"task_id": "a", "completion": 7},
            "field 'completion': expected a string or a list of chat messages",
        ),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_rows_name_file_and_line(
    tmp_path: Path, batch: tuple[Path, Path], row: object, fragment: str
) -> None:
    tasks, completions = batch
    with completions.open("a") as handle:
        handle.write("\n" + json.dumps(row) + "\n")
    result = rlv(
        "verify",
        *io_args(tasks, completions, tmp_path / "s"),
    )
    assert_user_error(result, f"{completions}:5", fragment)


def test_user_errors_are_one_line(tmp_path: Path, batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    out = str(tmp_path / "s.jsonl")
    common = io_args(tasks, completions, out)
    assert_user_error(
        rlv("verify", "--verifier", "nope", *common), "unknown verifier 'nope'", "exact_match"
    )
    assert_user_error(
        rlv("verify", "--verifier", "exact_match", "--config", "bogus=1", *common),
        "unknown config key 'bogus'",
    )
    assert_user_error(
        rlv("verify", "--verifier", "exact_match", "--config", "normalise=[1]", *common),
        "config key 'normalise'",
    )
    assert_user_error(
        rlv(
            "verify",
            *io_args(tmp_path / "none.jsonl", completions, out),
        ),
        "none.jsonl: no such file",
    )
    assert_user_error(rlv("verify", "--verifier", "0.5*+", *common), "reward spec")
    (tmp_path / "bad.toml").write_text("x = [")
    assert_user_error(
        rlv("verify", "--config-file", str(tmp_path / "bad.toml"), *common),
        "bad.toml: malformed config",
    )
    assert_user_error(rlv("verify", "--config", "bogus=1", *common), "config for 'bogus'")


def test_config_file_and_overrides(tmp_path: Path, batch: tuple[Path, Path]) -> None:
    tasks, completions = batch
    (tmp_path / "c.toml").write_text('[exact_match]\nanswer_pattern = "(.*)"\nnormalise = false\n')
    out = tmp_path / "s.jsonl"
    result = rlv(
        "verify",
        "--config-file",
        str(tmp_path / "c.toml"),
        "--config",
        "exact_match.normalise=true",
        *io_args(tasks, completions, out),
    )
    assert result.returncode == 0, result.stderr
    rewards = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
    assert rewards == [0.0, 0.0, 0.0]  # the pattern takes the whole text, tags included


def test_plugins_json_lists_broken_plugin_beside_good_ones(make_plugin: MakePlugin) -> None:
    site = make_plugin("good", GOOD_PLUGIN)
    make_plugin("broken", "raise RuntimeError('plugin is broken on purpose')\n")
    result = rlv("plugins", "--json", env={"PYTHONPATH": str(site)})
    assert result.returncode == 0, result.stderr
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert plugins["good"]["verifiers"] == ["good"]
    assert plugins["broken"]["state"] == "failed"
    assert "plugin is broken on purpose" in plugins["broken"]["errors"][0]
    assert "calibration" in plugins or "calibration" not in _installed()


def _installed() -> set[str]:
    from importlib.metadata import entry_points

    return {ep.name for ep in entry_points(group="rl_verifier")}


def test_verifiers_json_has_schemas_and_defaults() -> None:
    result = rlv("verifiers", "--json")
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    schema = entries["exact_match"]["config"]
    assert schema["properties"]["normalise"]["default"] is True
    assert entries["exact_match"]["reward_range"] == [0.0, 1.0]


def test_plugin_commands_hook_adds_a_command(make_plugin: MakePlugin) -> None:
    site = make_plugin(
        "cmd",
        "import click\nfrom rl_verifier import hookimpl\n"
        "@hookimpl\ndef register_commands(cli):\n"
        "    @cli.command()\n    def hello():\n        click.echo('hello from a plugin')\n",
    )
    result = rlv("hello", env={"PYTHONPATH": str(site)})
    assert result.stdout.strip() == "hello from a plugin", result.stderr


HANGING_PLUGIN = """
from rl_verifier import Verdict, Verifier, hookimpl

class Hang(Verifier):
    '''Never returns when the completion says so.'''
    name = "hang"
    default_timeout_s = 0.5
    def verify(self, task, completion):
        while completion.text() == "hang":
            pass
        return Verdict.ok(1.0)

@hookimpl
def register_verifiers(register):
    register(Hang)
"""


def test_verifier_that_never_returns_is_cut_and_the_rest_score(
    tmp_path: Path, make_plugin: MakePlugin
) -> None:
    site = make_plugin("hang", HANGING_PLUGIN)
    tasks = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "p"}])
    completions = write_jsonl(
        tmp_path / "c.jsonl",
        [{"task_id": "a", "completion": text} for text in ["hang", "fine", "hang", "fine"]],
    )
    out = tmp_path / "s.jsonl"
    result = rlv(
        "verify",
        "--verifier",
        "hang",
        *io_args(tasks, completions, out),
        env={"PYTHONPATH": str(site)},
    )
    assert result.returncode == 0, result.stderr
    rows = sorted(
        (r["sample_index"], r["status"]) for r in map(json.loads, out.read_text().splitlines())
    )
    assert rows == [(0, "timeout"), (1, "ok"), (2, "timeout"), (3, "ok")]
    assert "timeout 2" in result.stdout


def test_register_verifier_fixture_makes_a_class_usable_in_process(
    tmp_path: Path, batch: tuple[Path, Path], register_verifier: object
) -> None:
    from click.testing import CliRunner
    from rlv_test_verifiers import Behaviour

    from rl_verifier.cli.app import cli

    register_verifier(Behaviour)  # type: ignore[operator]
    tasks, completions = batch
    out = tmp_path / "s.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "verify",
            "--verifier",
            "behaviour",
            *io_args(tasks, completions, out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 3
