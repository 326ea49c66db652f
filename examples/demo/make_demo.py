"""Generate the demo's tasks and warm-up examples (deterministic; rerun to refresh).

Each task shows a signal word; half the words make the event likely (90%), half
unlikely (10%). The outcome of each task is drawn once from that rate. The warm-up
completions only teach the answer *format*: their probabilities are random digits that
ignore the signal, so any gain in calibration reward during RL is learned from the
verifier's reward, not copied from the warm-up data.

Run: python examples/demo/make_demo.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
LIKELY = ["amber", "cobalt", "falcon", "harbor"]
UNLIKELY = ["quartz", "willow", "summit", "meadow"]
TASKS_PER_WORD = 8


def main() -> None:
    rng = random.Random(20261129)
    tasks, warmup = [], []
    for word in LIKELY + UNLIKELY:
        rate = 0.9 if word in LIKELY else 0.1
        for i in range(TASKS_PER_WORD):
            task_id = f"{word}-{i}"
            prompt = (
                f"Signal: {word}. Will the event happen? "
                "Answer with <probability>0.X</probability>."
            )
            outcome = int(rng.random() < rate)
            tasks.append(
                {
                    "id": task_id,
                    "prompt": prompt,
                    "verifier": "calibration",
                    "reference": {"outcome": outcome},
                    "metadata": {"signal": word, "rate": rate},
                }
            )
            for _ in range(2):
                digit = rng.randint(1, 9)
                warmup.append(
                    {"task_id": task_id, "completion": f"<probability>0.{digit}</probability>"}
                )
    write(HERE / "tasks.jsonl", tasks)
    write(HERE / "warmup.jsonl", warmup)


def write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
