"""Generate the tool recipe's tasks and warm-up episodes (deterministic; rerun to refresh).

Tasks: Fictopedia's 200 single-hop questions, as the `fictopedia` task set has them. One
search finds each answer, so the recipe's budget is one call (see tools.toml).

Warm-up: one scripted episode per task, written as its assistant turns only: `rlv train`
replays them through the `search_tools` environment, which runs the searches, so the tool
results the warm-up trains around are the real ones. Each episode is a reply with search
calls, then a final reply that is only a citation. What the built-in model (a million
parameters, random weights under its LoRA) can learn in minutes sets the script's limits:
it cannot copy a name out of the question or an id out of a search result, let alone read
an answer, so the scripted search is one keyword per kind of question (`founded`,
`inventor`, `river`, `ship`) and no answer is written (the verifier's answer part stays 0).

The script teaches the *format*, not what the reward prefers: half of the episodes search
twice (over the budget), and half cite the document their search returned while the other
half cite an id no search returned. Keeping within the budget and citing what the search
returned are left for RL to learn from the verifier's reward.

Run: python examples/tools/make_tools.py
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rl_verifier.internal import write_text
from rl_verifier_search_env.corpus import load_index
from rl_verifier_search_env.env import make_search
from rl_verifier_search_env.fictopedia import fictopedia_tasks

HERE = Path(__file__).parent
K = 1  # one result per search keeps episodes short
KEYWORDS = {  # kind of question -> the scripted search
    "town_founded": "founded",
    "invention": "inventor",
    "river_length": "river",
    "ship_builder": "ship",
}


def call(query: str) -> str:
    arguments = {"query": query, "k": K}
    return f"<tool_call>{json.dumps({'name': 'search', 'arguments': arguments})}</tool_call>"


def main() -> None:
    rng = random.Random(20261201)
    search = make_search(load_index())
    tasks = [t for t in fictopedia_tasks() if t.metadata["hops"] == 1]
    all_ids = [f"fx-{i:03d}" for i in range(1, 201)]
    rows = []
    for task in tasks:
        query = KEYWORDS[str(task.metadata["kind"])]
        calls = rng.choice((1, 2))
        returned = [doc["id"] for doc in search(query, K)]
        if rng.random() < 0.5:
            cited = returned[0]
        else:
            cited = rng.choice([i for i in all_ids if i not in returned])
        replies = [call(query) * calls, f"[{cited}]"]
        rows.append(
            {
                "task_id": task.id,
                "completion": [{"role": "assistant", "content": r} for r in replies],
            }
        )
    write_jsonl(HERE / "tasks.jsonl", [t.model_dump(mode="json") for t in tasks])
    write_jsonl(HERE / "warmup.jsonl", rows)
    print(f"wrote {len(tasks)} tasks and {len(rows)} warm-up episodes to {HERE}")


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
