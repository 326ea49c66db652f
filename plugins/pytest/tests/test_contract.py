"""The core's contract tests on one task of each format, on bwrap and on docker."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from rl_verifier import Status
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_pytest import PytestVerifier
from rl_verifier_pytest.tasks import example_tasks


class PytestContract(VerifierContract):
    verifier_class = PytestVerifier
    config: ClassVar[dict[str, Any]] = {}

    def cases(self) -> list[Case]:
        add, largest, stdio = example_tasks()
        return [
            Case(add, "```python\ndef add(a, b):\n    return a + b\n```", Status.OK, 1.0),
            Case(add, "```python\ndef add(a, b):\n    return a * b\n```", Status.OK, 0.0),
            Case(largest, "```py\n    return max(numbers)\n```", Status.OK, 1.0),
            Case(largest, "```\ndef largest(numbers):\n    return 0\n```", Status.OK, 0.0),
            Case(stdio, "```python\nprint(sum(map(int, input().split())))\n```", Status.OK, 1.0),
            Case(stdio, "```python\nprint(3)\n```", Status.OK, 0.0),
            Case(add, "def add(a, b): return a + b", Status.INVALID, 0.0),
            Case(largest, "I cannot solve this.", Status.INVALID, 0.0),
        ]


@pytest.mark.requires("bwrap")
class TestPytestContract(PytestContract):
    pass


class TestPytestContractOnDocker(PytestContract):
    """The same cases in containers, also through worker processes that each open their own
    docker sandbox (and are killed at a deadline, leaving containers the next one reaps)."""

    config: ClassVar[dict[str, Any]] = {"backend": "docker"}

    @pytest.fixture(autouse=True)
    def _engine(self, docker_ready: None) -> None:
        pass
