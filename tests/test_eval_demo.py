"""docs/eval.md's "Base against trained: the tiny-model demo": the demo is trained (here with its
warm-up and RL cut short), its base and its checkpoint are evaluated on held-out tasks with
the documented commands, and `rlv eval compare` prints lines shaped as documented, whose
verdicts agree with their intervals."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RLV = [sys.executable, "-c", "from rl_verifier.cli.app import main; main()"]
# The demo cut short to keep make test cheap: too short to learn the format, so this checks
# the commands and the comparison's lines, not the improvement the documented run shows.
SHORT = ["warmup_steps=4", "steps=1", "groups_per_step=2", "group_size=4"]
FEWER = {"-n": "2", "-k": "1,2"}  # samples per task: 2, not the documented 8


def fewer_samples(command: list[str]) -> list[str]:
    return [FEWER.get(command[i - 1], arg) if i else arg for i, arg in enumerate(command)]


SECTION = "## Base against trained: the tiny-model demo"


def documented() -> tuple[list[list[str]], list[str]]:
    """The section's commands (each as argv, ``rlv`` dropped) and the compare's output."""
    text = (ROOT / "docs" / "eval.md").read_text().split(SECTION, 1)[1]
    script = re.search(r"```sh\n(.*?)```", text, re.S)
    output = re.search(r"```text\n(.*?)```", text, re.S)
    assert script and output, "docs/eval.md lost the demo's worked example"
    commands = [shlex.split(line)[1:] for line in script.group(1).replace("\\\n", " ").splitlines()]
    return commands, output.group(1).splitlines()


def rlv(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*RLV, *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done


@pytest.mark.slow
def test_the_demo_against_its_base_on_held_out_tasks(tmp_path: Path) -> None:
    (train, base, trained, compare), expected = documented()
    assert train[:2] == ["train", "examples/demo/demo.toml"]
    train[1] = str(ROOT / train[1])
    rlv([*train, *(a for s in SHORT for a in ("--set", s))], cwd=tmp_path)
    for command in (base, trained):
        assert "taskset:calibration-example:test" in command  # tasks the demo never saw
        assert {"-n", "-k"} <= set(command)
        rlv(fewer_samples(command), cwd=tmp_path)
    printed = rlv(compare, cwd=tmp_path).stdout.splitlines()
    assert printed[0] == expected[0]
    shape = re.compile(r"  (\S+) +A (-?[\d.]+)  B (-?[\d.]+)  B-A ([-+][\d.]+)( \[.*\])?  "
                       r"over (\d+) tasks: (significant|not significant)")  # fmt: skip
    rows = [shape.fullmatch(line) for line in printed[1:]]
    wanted = [shape.fullmatch(line) for line in expected[1:]]
    assert all(rows) and all(wanted), (printed, expected)
    assert [w.group(1) for w in wanted if w] == ["mean_reward", "pass@1", "pass@8"]
    assert [r.group(1) for r in rows if r] == ["mean_reward", "pass@1", "pass@2"]
    as_json = json.loads(rlv([*compare, "--json"], cwd=tmp_path).stdout)
    for row in as_json:
        assert row["tasks"] == 9
        assert row["difference"]["mean"] == pytest.approx(row["b"] - row["a"])
        holds_zero = row["difference"]["low"] <= 0 <= row["difference"]["high"]
        assert row["significant"] is not holds_zero
