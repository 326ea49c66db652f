"""The plugin registers `math` and `math-example` (and `rlv verifiers` lists the verifier with
its settings); the example's references are right."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from rl_verifier.testing import get_plugins, load_task_source, score_once
from rl_verifier.testing import rlv_cli as cli
from rl_verifier_math import MathVerifier, arithmetic_tasks


def test_plugin_registers_the_verifier_and_the_task_set() -> None:
    plugins = get_plugins()
    assert plugins.registry.get("math").cls is MathVerifier
    assert plugins.task_sets["math-example"].plugin == "math"
    tasks = load_task_source("taskset:math-example")
    assert list(tasks) == [t.id for t in arithmetic_tasks()]


def test_rlv_verifiers_lists_math_with_its_settings() -> None:
    listed = CliRunner().invoke(cli, ["verifiers"])
    assert listed.exit_code == 0, listed.output
    block = re.split(r"\n(?=\S)", listed.output.split("\nmath  (math ")[1])[0]
    assert '--config extract=<auto|boxed|answer_line|whole>  default "auto"' in block
    for setting in ("percent=<bool>  default false", "strip_units=<bool>  default true"):
        assert f"--config {setting}" in block
    as_json = CliRunner().invoke(cli, ["verifiers", "--json"])
    [entry] = [e for e in json.loads(as_json.output) if e["name"] == "math"]
    screens = {"reject_hedges", "reject_unevaluated", "max_digits", "max_answer_chars"}
    assert screens <= set(entry["config"]["properties"])
    assert entry["plugin"] == "math" and entry["default_timeout_s"] == 10.0


def test_example_tasks_are_answered_by_their_arithmetic() -> None:
    tasks = arithmetic_tasks()
    assert len({t.id for t in tasks}) == len(tasks) == 64
    completions = []
    for item in tasks:
        match = re.search(r"\$(\d+) (\+|-|\\times) (\d+)\$", str(item.prompt))
        assert match is not None, item.prompt
        a, op, b = match.groups()
        value = {"+": int(a) + int(b), "-": int(a) - int(b), "\\times": int(a) * int(b)}[op]
        completions.append(f"So the result is $\\boxed{{{value}}}$.")
    scores = score_once(MathVerifier(), list(zip(tasks, completions, strict=True)))
    assert [s.reward for s in scores] == [1.0] * len(tasks)
