"""Generate the calibration recipe's tasks (deterministic; rerun to refresh).

Each question states its own evidence: how often such an event happened on past occasions
like this one, as a rate ("the rain rate was 0.9"), and asks whether it will happen next
time. The stated rate is the event's true rate, 0.9 or 0.1, and each task's outcome is
drawn from it: within each rate, exactly that share of the tasks resolve yes (which tasks
do is random), so the outcomes match the evidence in every split. A forecaster that reads
the rate and says 0.9 or 0.1 scores 1 - 0.09 = 0.91 on average; always answering 0.5
scores 0.75.

Training tasks are `train.jsonl`. The held-out split (`heldout.jsonl`) asks the same kinds
of question, about places, people, teams and machines that never occur in training, so no
held-out prompt occurs in training.

The warm-up rows (`warmup.jsonl`) teach only the answer *format*: each training task with
`<probability>0.D</probability>` where D is a random digit from 1 to 9 that ignores the
stated rate. What the policy learns about the rate, it learns from the verifier's reward.

Run: python examples/calibration/make_calibration.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
SYSTEM = "You are a forecaster."
INSTRUCTION = "Answer with <probability>0.X</probability>."
RATES = (0.9, 0.1)

# Kinds of question, each stating the event's rate on past occasions like this one ({r},
# written as a decimal, e.g. 0.9) about an entity ({x}).
KINDS = {
    "place": [
        "Will it rain in {x} tomorrow? On past days like this, the rain rate was {r}.",
        "Will the {x} train run late tomorrow? On past mornings like this, it ran late at a "
        "rate of {r}.",
        "Will the bakery in {x} sell out this Saturday? Its sell-out rate on past Saturdays "
        "is {r}.",
        "Will the {x} ferry be cancelled today? On past windy days, its cancellation rate "
        "was {r}.",
    ],
    "person": [
        "Will {x} pass the exam? {x}'s pass rate on past practice tests is {r}.",
        "Will {x} be on time tomorrow? On past workdays, {x} was on time at a rate of {r}.",
        "Will {x} win the next chess game? {x}'s win rate against this opponent is {r}.",
        "Will {x} finish the next race? {x}'s finish rate in past races is {r}.",
    ],
    "team": [
        "Will the {x} win their next home game? Their home win rate is {r}.",
        "Will the {x} score first next match? They scored first at a rate of {r}.",
    ],
    "machine": [
        "Will machine {x} jam in the next run? Its jam rate over past runs is {r}.",
        "Will server {x} crash during the next update? Its crash rate in past updates is {r}.",
    ],
}

PLACES = [
    "Harlow", "Brenton", "Calder", "Dunmore", "Elston", "Fairby", "Garford", "Hollin",
    "Ivesby", "Jarrow", "Kelso", "Lanford", "Merrow", "Norcott", "Oakham", "Penrith",
    "Quarley", "Rydal", "Selby", "Tarland", "Ulverby", "Varden", "Wexcombe", "Yarmby",
    "Alnmouth", "Bexley", "Corbridge", "Dalby", "Eskdale", "Frome", "Glenrock", "Hawes",
]
PEOPLE = [
    "Maya", "Tomas", "Priya", "Jonah", "Elena", "Kofi", "Sara", "Malik", "Ines", "Oskar",
    "Leah", "Ravi", "Nora", "Hugo", "Amara", "Felix", "Yuki", "Dario", "Lena", "Omar",
    "Clara", "Ivan", "Zara", "Theo", "Alma", "Bruno", "Celia", "Emil", "Freya", "Gus",
    "Hana", "Joel",
]
TEAMS = [
    "Harriers", "Comets", "Otters", "Falcons", "Rovers", "Badgers", "Pilots", "Wolves",
    "Herons", "Titans", "Lynx", "Mariners", "Ravens", "Stags", "Vipers", "Hornets",
]
MACHINES = [
    "K-7", "B-12", "Z-3", "Q-9", "M-4", "T-21", "R-8", "D-15",
    "P-6", "X-11", "L-2", "G-30", "H-5", "N-17", "V-24", "C-19",
]
ENTITIES = {"place": PLACES, "person": PEOPLE, "team": TEAMS, "machine": MACHINES}


def question(template: str, entity: str, rate: float) -> str:
    return f"{template.format(x=entity, r=rate)} {INSTRUCTION}"


def tasks_for(entities: dict[str, list[str]], prefix: str, rng: random.Random) -> list[dict]:
    """One task per (kind of question, entity, rate)."""
    rows = []
    for kind, templates in KINDS.items():
        for t, template in enumerate(templates):
            for entity in entities[kind]:
                for rate in RATES:
                    rows.append(
                        {
                            "id": f"{prefix}-{kind}{t}-{slug(entity)}-{rate}",
                            "prompt": messages(question(template, entity, rate)),
                            "verifier": "calibration",
                            "metadata": {"rate": rate, "kind": kind, "entity": entity},
                        }
                    )
    resolve(rows, rng)
    return rows


def messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def resolve(rows: list[dict], rng: random.Random) -> None:
    """Outcomes: within each rate, exactly that share of the tasks (chosen at random) yes."""
    for rate in RATES:
        group = [row for row in rows if row["metadata"]["rate"] == rate]
        yes = set(rng.sample(range(len(group)), round(rate * len(group))))
        for i, row in enumerate(group):
            row["reference"] = {"outcome": int(i in yes)}


def slug(name: str) -> str:
    return name.lower().replace("-", "")


def split(names: list[str], held_out: int) -> tuple[list[str], list[str]]:
    return names[:-held_out], names[-held_out:]


def main() -> None:
    rng = random.Random(20261207)
    train, held = {}, {}
    for kind, names in ENTITIES.items():
        shuffled = rng.sample(names, len(names))
        train[kind], held[kind] = split(shuffled, len(names) // 4)
    tasks = tasks_for(train, "train", rng)
    heldout = tasks_for(held, "held", rng)
    warmup = [
        {"task_id": row["id"], "completion": f"<probability>0.{rng.randint(1, 9)}</probability>"}
        for row in tasks
    ]
    write(HERE / "train.jsonl", tasks)
    write(HERE / "heldout.jsonl", heldout)
    write(HERE / "warmup.jsonl", warmup)
    print(f"{len(tasks)} training tasks, {len(heldout)} held-out, {len(warmup)} warm-up rows")


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
