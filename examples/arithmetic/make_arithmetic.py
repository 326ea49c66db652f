"""Generate the arithmetic recipe's tasks (deterministic; rerun to refresh).

One-step sums and differences of two numbers from 2 to 49, each asked as
``What is $a + b$? Put the final answer in \\boxed{}.`` with the number as reference, for
the `math` verifier. The pairs are split once, at random: ``tasks.jsonl`` (train) and
``heldout.jsonl`` (evaluated during the run, never trained on) share no question.

Run: python examples/arithmetic/make_arithmetic.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from rl_verifier.internal import write_text

HERE = Path(__file__).parent
TRAIN, HELD_OUT = 256, 48


def main() -> None:
    rng = random.Random(20261202)
    pairs = [(a, b, op) for a in range(2, 50) for b in range(2, 50) for op in "+-" if a >= b]
    rng.shuffle(pairs)
    rows = [task(i, a, b, op) for i, (a, b, op) in enumerate(pairs[: TRAIN + HELD_OUT])]
    write_jsonl(HERE / "tasks.jsonl", rows[:TRAIN])
    write_jsonl(HERE / "heldout.jsonl", rows[TRAIN:])
    print(f"wrote {TRAIN} training and {HELD_OUT} held-out tasks to {HERE}")


def task(index: int, a: int, b: int, op: str) -> dict[str, object]:
    answer = a + b if op == "+" else a - b
    return {
        "id": f"arith-{index:03d}",
        "prompt": f"What is ${a} {op} {b}$? Put the final answer in \\boxed{{}}.",
        "verifier": "math",
        "reference": {"answer": str(answer)},
        "metadata": {"operation": op},
    }


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
