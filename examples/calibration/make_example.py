"""Write the calibration example: synthetic binary forecasting questions and completions.

Run ``python examples/calibration/make_example.py``; it rewrites ``tasks.jsonl`` and
``completions.jsonl`` next to this file, identically on every run (seeded).

Questions and outcomes are made up. Each question has a hidden chance of happening; the
outcome is drawn from it, and a noisy but informed forecaster reports that chance in one
of several formats. A few completions are hedges the verifier must refuse.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SEED = 20240601
PROMPT = "{question} Think briefly, then give the probability that the answer is yes (0 to 1)."

# (subjects, events): every subject paired with every event of its group; 3 x 5 x 4 = 60.
GROUPS = [
    (
        ["Northwind Rail", "Helix Biotech", "Quantum Foods", "Orbital Freight", "Solace Energy"],
        [
            "announce a merger before the end of the quarter",
            "report revenue growth above 5% this year",
            "raise its prices by more than 3% before December",
            "open its new headquarters before September",
        ],
    ),
    (
        ["Port Avery", "Redwood Falls", "Lakeshore", "Tamsin Bay", "Greyhaven"],
        [
            "record more than 30 days above 30 degrees this summer",
            "approve its new transit plan this year",
            "report population growth in its next census update",
            "hold its mayoral election on schedule",
        ],
    ),
    (
        [
            "the Redwood Rovers",
            "the Meridian Comets",
            "the Avery Harriers",
            "the Greyhaven Gulls",
            "the Tamsin Tides",
        ],
        [
            "win their next home match",
            "reach the league semi-finals this season",
            "sign a new head coach before the season starts",
            "finish the season with a winning record",
        ],
    ),
]
PHRASES = {
    "tag": "Weighing base rates and recent news.\n<probability>{p}</probability>",
    "label": "Base rates suggest caution; recent signals point the other way.\nProbability: {p}",
    "bold": "**Reasoning:** mixed signals.\n\n**Probability:** {p}",
    "confidence": "Confidence: {pct}",
    "percent": "I'd put this at about {pct}.",
    "decimal": "My estimate is {p}.",
    "think": "<think>Could be 0.2, could be 0.8; let me settle.</think>\nProbability: {p}",
    "twice": "Roughly {pct} (that is, {p}).",
}
HEDGES = [
    "It could go either way: 0.3 or 0.7.",
    "Somewhere between 60% and 80%.",
    "I'm 50% sure... actually 90%.",
    "Very likely. 150%.",
    "Hard to say without more data.",
]


def make_tasks(rng: random.Random) -> list[tuple[dict[str, Any], float]]:
    """60 questions with their hidden chance; every tenth resolves ForecastBench-style."""
    questions = [
        f"Will {subject} {event}?"
        for subjects, events in GROUPS
        for event in events
        for subject in subjects
    ]
    tasks = []
    for number, question in enumerate(questions):
        chance = rng.betavariate(0.7, 0.7)
        outcome = int(rng.random() < chance)
        reference: dict[str, Any] = (
            {"resolved_to": float(outcome), "resolved": True}
            if number % 10 == 9
            else {"outcome": outcome}
        )
        row = {
            "id": f"cal-{number:03d}",
            "prompt": PROMPT.format(question=question),
            "verifier": "calibration",
            "reference": reference,
            "metadata": {},
        }
        tasks.append((row, chance))
    return tasks


def forecast_text(rng: random.Random, chance: float) -> str:
    """An informed but noisy forecast of ``chance`` in a random format."""
    p = min(0.99, max(0.01, chance + rng.gauss(0.0, 0.12)))
    p = round(p, 2)
    style = rng.choice(sorted(PHRASES))
    return PHRASES[style].format(p=f"{p:.2f}", pct=f"{round(p * 100)}%")


def make_completions(
    rng: random.Random, tasks: list[tuple[dict[str, Any], float]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for number, (task, chance) in enumerate(tasks):
        for sample in range(rng.choice([2, 2, 3])):
            text = rng.choice(HEDGES) if rng.random() < 0.06 else forecast_text(rng, chance)
            completion: Any = text
            if number % 20 == 3 and sample == 0:
                completion = [
                    {"role": "system", "content": "You are a careful forecaster."},
                    {"role": "user", "content": task["prompt"]},
                    {"role": "assistant", "content": text},
                ]
            rows.append({"task_id": task["id"], "completion": completion})
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    rng = random.Random(SEED)
    tasks = make_tasks(rng)
    completions = make_completions(rng, tasks)
    write_jsonl(HERE / "tasks.jsonl", [task for task, _ in tasks])
    write_jsonl(HERE / "completions.jsonl", completions)
    print(f"wrote {len(tasks)} tasks and {len(completions)} completions to {HERE}")


if __name__ == "__main__":
    main()
