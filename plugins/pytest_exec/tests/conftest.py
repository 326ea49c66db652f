"""Shared fixtures: one verifier on the real bwrap sandbox, and task builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rl_verifier.contracts import Score, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest_exec import PytestVerifier
from rl_verifier_pytest_exec.tasks import example_tasks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the real sandbox are skipped, with one reason, where bwrap is missing."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and "verifier" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.requires("bwrap"))


@pytest.fixture(scope="session")
def verifier() -> PytestVerifier:
    v = PytestVerifier({"backend": "bwrap", "run_timeout_s": 5.0})
    v.sandbox()  # fail loudly here if bwrap is unusable
    return v


@pytest.fixture(scope="session")
def tasks() -> dict[str, Task]:
    return {task.id: task for task in example_tasks()}


def fenced(code: str) -> str:
    return f"Here you go:\n```python\n{code}\n```\n"


def score(verifier: PytestVerifier, task: Task, code: str, **config: Any) -> Score:
    v = PytestVerifier({**verifier.config.model_dump(), **config}) if config else verifier
    [result] = score_once(v, [(task, fenced(code))])
    return result
