"""An example task set: binary questions whose outcome follows a signal word."""

from __future__ import annotations

import random

from rl_verifier import Task

LIKELY = ("amber", "cobalt", "falcon", "harbor")
UNLIKELY = ("quartz", "willow", "summit", "meadow")


def example_tasks(per_word: int = 4, seed: int = 7) -> list[Task]:
    """Forecasting tasks: a likely word resolves yes 90% of the time, an unlikely one 10%."""
    rng = random.Random(seed)
    tasks = []
    for word in LIKELY + UNLIKELY:
        rate = 0.9 if word in LIKELY else 0.1
        for i in range(per_word):
            tasks.append(
                Task(
                    id=f"{word}-{i}",
                    prompt=f"Signal: {word}. Will the event happen? "
                    "Answer with <probability>0.X</probability>.",
                    verifier="calibration",
                    reference={"outcome": int(rng.random() < rate)},
                    metadata={"signal": word, "rate": rate},
                )
            )
    return tasks
