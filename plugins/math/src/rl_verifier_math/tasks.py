"""Tasks: GSM8K and MATH rows as they are, and the generated ``math-example`` set."""

from __future__ import annotations

import random
from typing import Any

from rl_verifier import Task

INSTRUCTION = "Put the final answer in \\boxed{}."
QUESTION_KEYS = ("question", "problem", "prompt")
ID_KEYS = ("id", "unique_id", "task_id")


def task_from_row(row: dict[str, Any], fallback_id: str) -> Task:
    """A task for the ``math`` verifier from a dataset row: GSM8K (``question``, ``answer``
    with ``#### N``), MATH (``problem``, ``solution`` with ``\\boxed{}``) or MATH-500
    (``problem``, ``answer``, ``unique_id``). The row, less its question, is the reference."""
    question = next((row[k] for k in QUESTION_KEYS if isinstance(row.get(k), str)), None)
    if question is None:
        raise ValueError(f"row {fallback_id}: no 'question' or 'problem' text")
    task_id = next((str(row[k]) for k in ID_KEYS if row.get(k) is not None), fallback_id)
    reference = {k: v for k, v in row.items() if k not in QUESTION_KEYS}
    return Task(id=task_id, prompt=question, verifier="math", reference=reference)


def arithmetic_tasks(count: int = 64, seed: int = 7) -> list[Task]:
    """Small arithmetic questions (sums, differences, products of one- and two-digit
    numbers) whose answer goes in ``\\boxed{}``."""
    rng = random.Random(seed)
    tasks = []
    for index in range(count):
        op = ("+", "-", "*")[index % 3]
        a, b = rng.randint(2, 19), rng.randint(2, 9)
        answer = {"+": a + b, "-": a - b, "*": a * b}[op]
        shown = {"+": "+", "-": "-", "*": "\\times"}[op]
        tasks.append(
            Task(
                id=f"arith-{index:03d}",
                prompt=f"What is ${a} {shown} {b}$? {INSTRUCTION}",
                verifier="math",
                reference={"answer": str(answer)},
                metadata={"operation": op},
            )
        )
    return tasks
