"""The plugin registers `math` and `math-example`; the example's references are right."""

from __future__ import annotations

import re

from rl_verifier.plugins import get_plugins
from rl_verifier.resolve import load_task_source
from rl_verifier.testing import score_once
from rl_verifier_math import MathVerifier, arithmetic_tasks


def test_plugin_registers_the_verifier_and_the_task_set() -> None:
    plugins = get_plugins()
    assert plugins.registry.get("math").cls is MathVerifier
    assert plugins.task_sets["math-example"].plugin == "math"
    tasks = load_task_source("taskset:math-example")
    assert list(tasks) == [t.id for t in arithmetic_tasks()]


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
