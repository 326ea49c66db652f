"""Generate the judge_rank recipe's tasks (deterministic; rerun to refresh).

Short everyday questions, asked plainly, with no reference answer: the reward is an LLM
judge ranking each group of answers for being short, direct and on topic (RULER-style,
no labels). The questions are split once, at random: ``tasks.jsonl`` (train) and
``heldout.jsonl`` (evaluated during the run, never trained on) share none.

Run: python examples/judge_rank/make_judge_rank.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
HELD_OUT = 12
QUESTIONS = [
    "What colour is grass?",
    "How many legs does a spider have?",
    "What is the opposite of hot?",
    "Which animal says moo?",
    "What do bees make?",
    "What is frozen water called?",
    "How many days are in a week?",
    "What colour is a ripe banana?",
    "Which planet do we live on?",
    "What do you use to cut paper?",
    "What is the capital of Italy?",
    "How many hours are in a day?",
    "What do cows drink?",
    "Which season comes after winter?",
    "What is the largest ocean?",
    "What do you call a baby cat?",
    "What is the boiling point of water in Celsius?",
    "Which fruit is used to make wine?",
    "What gas do plants take in?",
    "How many sides does a triangle have?",
    "What language is spoken in Spain?",
    "What is the colour of the sky on a clear day?",
    "Which bird is a symbol of peace?",
    "What do you wear on your feet?",
    "What is the first letter of the alphabet?",
    "Which animal is known as the king of the jungle?",
    "What instrument has black and white keys?",
    "What is the main ingredient of bread?",
    "How many months are in a year?",
    "What do you call a house made of ice?",
    "Which organ pumps blood?",
    "What is the capital of Japan?",
    "What shape is a football?",
    "Which metal is liquid at room temperature?",
    "What do caterpillars turn into?",
    "How many wheels does a bicycle have?",
    "What is the opposite of up?",
    "Which star is closest to Earth?",
    "What do you call frozen rain?",
    "What is the tallest animal?",
    "What do you use to write on a blackboard?",
    "Which continent is Egypt in?",
    "What is the colour of snow?",
    "How many minutes are in an hour?",
    "What do fish breathe with?",
    "What is the capital of Germany?",
    "Which month has the fewest days?",
    "What fruit keeps the doctor away?",
    "What do you call a young dog?",
    "What is two plus three?",
    "Which animal has a trunk?",
    "What do you sleep on?",
    "What is the hottest planet?",
    "Which direction does the sun rise in?",
    "What do plants need from the sun?",
    "How many players are on a football team?",
    "What is the capital of Canada?",
    "Which sense do you use your nose for?",
    "What is a baby frog called?",
    "What do you call the person who flies a plane?",
]


def main() -> None:
    order = list(range(len(QUESTIONS)))
    random.Random(20261205).shuffle(order)
    rows = [task(i, QUESTIONS[i]) for i in order]
    write_jsonl(HERE / "tasks.jsonl", rows[HELD_OUT:])
    write_jsonl(HERE / "heldout.jsonl", rows[:HELD_OUT])
    print(f"wrote {len(rows) - HELD_OUT} training and {HELD_OUT} held-out tasks to {HERE}")


def task(index: int, question: str) -> dict[str, object]:
    return {"id": f"short-{index:02d}", "prompt": question}


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
