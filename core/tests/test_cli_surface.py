"""What users of CLIs in this field expect: -h, -V, -v/-q, python -m, clear listings."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

from rlv_cli_helpers import assert_user_error, io_args, rlv, write_jsonl

from rl_verifier import __version__


def test_python_dash_m_and_short_flags() -> None:
    module = subprocess.run(
        [sys.executable, "-m", "rl_verifier", "-V"], capture_output=True, text=True, timeout=60
    )
    assert module.returncode == 0 and module.stdout.strip() == f"rlv, version {__version__}"
    helped = rlv("verify", "-h")
    assert helped.returncode == 0
    assert "--resume" in helped.stdout and "Examples:" in helped.stdout
    assert "Usage: rlv verify" in helped.stdout


def test_quiet_prints_no_summary_and_verbose_logs(tmp_path: Path) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [{"id": "a", "prompt": "p", "verifier": "exact_match", "reference": {"answer": "4"}}],
    )
    completions = write_jsonl(tmp_path / "c.jsonl", [{"task_id": "a", "completion": "4"}])
    quiet = rlv("-q", "verify", *io_args(tasks, completions, tmp_path / "q.jsonl"))
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    plain = rlv("verify", *io_args(tasks, completions, tmp_path / "p.jsonl"))
    assert "mean reward" in plain.stdout and "INFO" not in plain.stderr
    loud = rlv("-v", "verify", *io_args(tasks, completions, tmp_path / "l.jsonl"))
    assert "mean reward" in loud.stdout
    info = [line for line in loud.stderr.splitlines() if line.startswith("rlv: INFO: ")]
    assert any(f"read 1 tasks from {tasks}, 1 completions from {completions}" in line
               for line in info), loud.stderr  # fmt: skip
    assert any("verifier exact_match " in line for line in info), loud.stderr


def test_documented_shell_completion_lines_work() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    shells = re.findall(r"_RLV_COMPLETE=(\w+)_source rlv", docs)
    assert sorted(shells) == ["bash", "fish", "zsh"]
    for shell in shells:
        script = rlv(env={"_RLV_COMPLETE": f"{shell}_source"})
        assert script.returncode == 0, script.stderr
        assert f"_RLV_COMPLETE={shell}_complete" in script.stdout, script.stdout


def test_help_of_main_commands_describes_every_option_with_an_example() -> None:
    for command in ("verify", "train", "new"):
        result = rlv(command, "--help")
        assert result.returncode == 0
        assert "Example" in result.stdout, command


def test_new_lists_its_loss_choices() -> None:
    result = rlv("new", "--help")
    from rl_verifier.discovery.losses import policy_losses

    choices = "[" + "|".join(policy_losses()) + "]"
    assert "importance_sampling|ppo" in choices  # the registry's policy losses, in order
    assert choices in "".join(result.stdout.split())
    bad = rlv("new", "--verifier", "format", "--model", "rlv/tiny-chat", "--loss", "nope")
    assert bad.returncode == 2 and "is not one of" in bad.stderr


def test_verifiers_lists_types_and_descriptions() -> None:
    result = rlv("verifiers")
    assert result.returncode == 0
    assert "--config normalise=<bool>  default true" in result.stdout
    assert "Compare after SQuAD-style normalisation." in result.stdout


def test_plugins_json_lists_what_each_plugin_registers() -> None:
    listing = {p["name"]: p for p in json.loads(rlv("plugins", "--json").stdout)}
    builtin = listing["builtin"]
    assert builtin["verifiers"] == ["exact_match", "format"]
    assert "exact_match-example" in builtin["task_sets"]
    assert listing["training"]["environments"] == ["single_turn"]
    if "sandbox" in listing:  # rl-verifier-sandbox adds `rlv sandbox`
        assert listing["sandbox"]["commands"] == ["sandbox"]


def test_builder_on_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = rlv("builder", "--port", str(port))
    assert_user_error(result, f"port {port}", "already in use")
    assert result.stdout == ""  # no URL printed for a server that never started
