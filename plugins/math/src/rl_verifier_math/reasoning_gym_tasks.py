"""reasoning-gym's procedural generators as task sets for the ``math`` verifier.

``taskset:reasoning-gym:NAME`` is ``SIZE`` tasks of the generator ``NAME``, drawn with a
fixed seed, so every run and machine gets the same tasks. Only the generators whose answers
are math answers (numbers, fractions, roots, base-n digits, dates and durations) are
offered: for those, tests/test_oracle.py holds our verdicts to reasoning-gym's own
``score_answer``. A task's id is a hash of its question, and a question the generator
repeats is kept once, so ``:train`` and ``:test`` never share a question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from importlib import metadata
from typing import Any

from rl_verifier import Task, UserError

PREFIX = "reasoning-gym:"
SEED = 2026
SIZE = 250
INSTALL_HINT = "pip install 'rl-verifier-math[reasoning-gym]'"
INSTRUCTION = "Put the final answer in \\boxed{}."
# The generators whose answers our math verifier reads (checked against score_answer).
GENERATORS = (
    "base_conversion",
    "basic_arithmetic",
    "bitwise_arithmetic",
    "calendar_arithmetic",
    "chain_sum",
    "complex_arithmetic",
    "count_bits",
    "decimal_arithmetic",
    "decimal_chain_sum",
    "dice",
    "fraction_simplification",
    "gcd",
    "lcm",
    "leg_counting",
    "polynomial_equations",
    "power_function",
    "prime_factorization",
    "products",
    "simple_equations",
    "time_intervals",
)


def generator(name: str, seed: int, size: int) -> Any:
    """reasoning-gym's dataset ``name`` (a sequence of entries with its ``score_answer``)."""
    try:
        import reasoning_gym  # type: ignore[import-untyped]  # ships no type information
    except ImportError:
        raise UserError(f"task set '{PREFIX}{name}' needs reasoning-gym: {INSTALL_HINT}") from None
    return reasoning_gym.create_dataset(name, seed=seed, size=size)


def reasoning_gym_tasks(name: str, seed: int = SEED, size: int = SIZE) -> list[Task]:
    """The tasks of generator ``name``: its first ``size`` entries for ``seed``, each
    question asked once; ``metadata.index`` is the entry's index in the dataset."""
    dataset = generator(name, seed, size)
    source = f"reasoning-gym {metadata.version('reasoning-gym')}"
    tasks, seen = [], set()
    for index in range(size):
        entry = dataset[index]
        question = str(entry["question"])
        digest = hashlib.sha256(question.encode()).hexdigest()[:12]
        if digest in seen:
            continue
        seen.add(digest)
        reference: dict[str, Any] = {"answer": str(entry["answer"])}
        if name == "base_conversion":
            reference["base"] = entry["metadata"]["target_base"]
        tasks.append(
            Task(
                id=f"{name}-{digest}",
                prompt=f"{question}\n\n{INSTRUCTION}",
                verifier="math",
                reference=reference,
                metadata={"source": source, "dataset": name, "seed": seed, "index": index},
            )
        )
    return tasks


def loaders() -> dict[str, Callable[[], list[Task]]]:
    """``reasoning-gym:NAME`` → its loader, for each offered generator."""
    return {f"{PREFIX}{name}": _loader(name) for name in GENERATORS}


def _loader(name: str) -> Callable[[], list[Task]]:
    return lambda: reasoning_gym_tasks(name)
