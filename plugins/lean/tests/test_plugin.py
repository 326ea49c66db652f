"""Entry point registrations and the example task set."""

from __future__ import annotations

from lean_helpers import fake_verifier, lean, run_all

from rl_verifier.testing import discover
from rl_verifier_lean.tasks import example_proof


def test_plugin_registers_verifier_and_task_set() -> None:
    plugins = discover()
    assert "lean" in plugins.registry
    tasks = plugins.task_sets["lean-example"].value()
    assert len(tasks) >= 3 and all(t.verifier == "lean" for t in tasks)
    verdicts = run_all(fake_verifier(), [(t, lean(example_proof(t.id))) for t in tasks])
    assert all(v.reward == 1.0 for v in verdicts), verdicts
