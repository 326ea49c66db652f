"""The ``retrieval-example`` task set and plugin registration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_verifier import Completion, Status, Verifier
from rl_verifier_retrieval import plugin
from rl_verifier_retrieval.verifier import RetrievalVerifier


def test_plugin_registers_verifier_and_task_set() -> None:
    verifiers: list[type[Verifier]] = []
    sets: dict[str, Callable[[], list[Any]]] = {}
    plugin.register_verifiers(verifiers.append)
    plugin.register_task_sets(sets.__setitem__)
    assert verifiers == [RetrievalVerifier]
    assert list(sets) == ["retrieval-example"]


def test_example_tasks_reward_a_cited_right_answer() -> None:
    sets: dict[str, Callable[[], list[Any]]] = {}
    plugin.register_task_sets(sets.__setitem__)
    tasks = sets["retrieval-example"]()
    assert len(tasks) == 5
    verifier = RetrievalVerifier()
    for task in tasks:
        gold = task.reference["answers"][0]
        docs = task.reference["docs"]
        good = [i for i, d in enumerate(docs, 1) if gold.lower() in d["text"].lower()]
        marks = "".join(f"[{i}]" for i in good)
        verdict = verifier.verify(task, Completion(task_id=task.id, completion=f"{gold} {marks}"))
        assert verdict.status is Status.OK and verdict.reward == 1.0, task.id
        wrong = verifier.verify(task, Completion(task_id=task.id, completion="Nobody [1]"))
        assert wrong.reward < 0.5
