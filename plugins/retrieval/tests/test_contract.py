"""The core's contract tests on representative cases."""

from __future__ import annotations

from typing import Any, ClassVar

from rl_verifier import Status, Task
from rl_verifier.testing import Case, VerifierContract
from rl_verifier_retrieval.verifier import RetrievalVerifier

DOCS = [
    {"id": f"d{i}", "title": title, "text": f"{title} is a city."}
    for i, title in enumerate(["Paris", "Paris", "Lyon", "Berlin", "London"], start=1)
]


def paris_task(support: list[str]) -> Task:
    reference = {"answers": ["Paris"], "docs": DOCS, "support": support}
    return Task(id="paris", prompt="What is the capital of France?", reference=reference)


class TestRetrievalContract(VerifierContract):
    verifier_class = RetrievalVerifier
    config: ClassVar[dict[str, Any]] = {}

    def cases(self) -> list[Case]:
        task = paris_task(["d1", "d2"])
        return [
            Case(task, "Paris [d1][d2]", Status.OK, 1.0),
            Case(task, [{"role": "assistant", "content": "Paris [1]"}], Status.OK),
            Case(task, "London [d1][d2]", Status.OK, 0.4),
            Case(task, "Paris [d9]", Status.OK, 0.1),
            Case(task, "", Status.INVALID, 0.0),
            Case(task, "[d1][d2]", Status.INVALID, 0.0),
            Case(Task(id="no-answers", prompt="q"), "Paris", Status.ERROR),
        ]


class TestRetrievalContractF1(TestRetrievalContract):
    config: ClassVar[dict[str, Any]] = {"answer_match": "f1", "invalid_penalty": -0.2}

    def cases(self) -> list[Case]:
        task = paris_task(["d1", "d2"])
        return [
            Case(task, "Paris London [d1][d2]", Status.OK, 0.6 * 2 / 3 + 0.4),
            Case(task, "<think>", Status.OK, 0.0),
            Case(task, " [doc:d1] ", Status.INVALID, -0.2),
        ]
