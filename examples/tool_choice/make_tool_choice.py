"""Generate the tool-choice recipe's tasks (deterministic; rerun to refresh).

Each task is a user request and four tools (calculator, weather, translator, calendar);
the answer is the tool that handles it. Requests come from phrasings (templates) filled
with names, numbers, cities and languages. Each tool has six phrasings: four make the
training tasks (``tasks.jsonl``) and two, never trained on, make the held-out tasks
(``heldout.jsonl``), so the held-out eval asks for requests worded in ways the run never
saw, not only new fillings of seen wordings. Both files hold each tool equally often, so
always naming one tool scores 0.25.

Run: python examples/tool_choice/make_tool_choice.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from rl_verifier.internal import write_text

HERE = Path(__file__).parent
TOOLS = ("calculator", "weather", "translator", "calendar")
PER_TOOL_TRAIN, PER_TOOL_HELD_OUT = 48, 12
PHRASINGS = {
    "calculator": [
        "What is {a} times {b}?",
        "Add {a} and {b}.",
        "How much is {a} percent of {big}?",
        "Divide {big} by {a}.",
        "What do I get if I subtract {b} from {big}?",
        "Compute the square of {a}.",
    ],
    "weather": [
        "Will it rain in {city} {day}?",
        "What's the temperature in {city} {day}?",
        "Is it going to be windy in {city} {day}?",
        "Should I bring an umbrella to {city} {day}?",
        "How hot will it get in {city} {day}?",
        "Is snow expected in {city} {day}?",
    ],
    "translator": [
        "Translate '{phrase}' into {language}.",
        "How do you say '{phrase}' in {language}?",
        "What is '{phrase}' in {language}?",
        "Put '{phrase}' into {language} for me.",
        "I need '{phrase}' in {language}, please.",
        "Give me the {language} for '{phrase}'.",
    ],
    "calendar": [
        "Schedule a meeting with {person} {day} at {hour}.",
        "What is on my agenda {day} after {hour}?",
        "Move my appointment with {person} to {day}.",
        "Book lunch with {person} {day} at {hour}.",
        "Am I free {day} at {hour}?",
        "Cancel my call with {person} {day}.",
    ],
}
CITIES = ["Paris", "Tokyo", "Chicago", "Berlin", "Lagos", "Lima", "Oslo", "Delhi", "Cairo"]
DAYS = ["today", "tomorrow", "on Friday", "on Monday", "this weekend", "next Tuesday"]
PHRASES = ["good morning", "thank you", "where is the station", "I am hungry", "see you soon"]
LANGUAGES = ["Spanish", "German", "French", "Italian", "Japanese", "Portuguese"]
PEOPLE = ["Anna", "Tom", "Priya", "Kenji", "Maria", "Sam", "Olu"]
HOURS = ["9am", "noon", "3pm", "5:30pm"]


def main() -> None:
    rng = random.Random(20261205)
    train: list[dict[str, object]] = []
    held_out: list[dict[str, object]] = []
    for tool in TOOLS:
        phrasings = PHRASINGS[tool]
        train += requests(rng, tool, phrasings[:4], PER_TOOL_TRAIN, "train")
        held_out += requests(rng, tool, phrasings[4:], PER_TOOL_HELD_OUT, "heldout")
    rng.shuffle(train)
    rng.shuffle(held_out)
    write_jsonl(HERE / "tasks.jsonl", train)
    write_jsonl(HERE / "heldout.jsonl", held_out)
    print(f"wrote {len(train)} training and {len(held_out)} held-out tasks to {HERE}")


def requests(
    rng: random.Random, tool: str, phrasings: list[str], count: int, split: str
) -> list[dict[str, object]]:
    """``count`` distinct requests for ``tool``, the phrasings used in turn."""
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    while len(rows) < count:
        phrasing = phrasings[len(rows) % len(phrasings)]
        request = phrasing.format(
            a=rng.randint(3, 99), b=rng.randint(3, 99), big=rng.randint(100, 999),
            city=rng.choice(CITIES), day=rng.choice(DAYS), phrase=rng.choice(PHRASES),
            language=rng.choice(LANGUAGES), person=rng.choice(PEOPLE), hour=rng.choice(HOURS),
        )  # fmt: skip
        if request in seen:
            continue
        seen.add(request)
        rows.append(task(f"{split}-{tool}-{len(rows):02d}", tool, request, phrasing))
    return rows


def task(task_id: str, tool: str, request: str, phrasing: str) -> dict[str, object]:
    return {
        "id": task_id,
        "prompt": (
            "Which tool handles this request: calculator, weather, translator or calendar?\n"
            f"Request: {request}\nReply with the tool's name only."
        ),
        "verifier": "exact_match",
        "reference": {"answer": tool},
        "metadata": {"phrasing": phrasing},
    }


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
