"""Generate the tool recipe's tasks and warm-up episodes (deterministic; rerun to refresh).

Tasks: Fictopedia's 200 single-hop questions, one per entity (a town, an inventor, a river
or a ship), with a short prompt. A quarter of the entities of each kind are held out
(`heldout.jsonl`): the policy never trains on a question about them, and their documents
are ones no training episode retrieves. One search by the entity's name finds the answer,
so the recipe's budget is one call (see tools.toml).

Warm-up: one scripted episode per training task, written as its assistant turns only:
`rlv train` replays them through the `search_tools` environment, which runs the searches,
so the results the warm-up trains around are the real ones. The scripted searcher queries
the entity's name, reads the answer out of the document that comes back and cites it:

    <tool_call>{"name": "search", "arguments": {"query": "Hale Deidae", "k": 1}}</tool_call>
    <answer>singing barometer</answer> [fx-001]

Every episode searches once, within the recipe's budget. (An earlier script searched a
second time in half of its episodes, leaving the budget to RL; on SmolLM2 the warm-started
policy then opened a second call in nearly every reply, cut off unclosed at ``max_tokens``,
so every sample scored 0 and RL had no signal: see the README.)

Run: python examples/tools/make_tools.py
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rl_verifier import Task
from rl_verifier.internal import write_text
from rl_verifier_search_env.corpus import load_index
from rl_verifier_search_env.env import make_search
from rl_verifier_search_env.fictopedia import fictopedia_tasks

HERE = Path(__file__).parent
K = 1  # one result per search keeps episodes short
HELD_OUT_SHARE = 4  # one entity in four, per kind of question
INSTRUCTION = (
    "Search, then answer inside <answer></answer> and cite the document's id, like [fx-012]."
)
# kind of question -> how the question names its entity
KINDS = {
    "town_founded": r"In what year was (.+) founded\?",
    "invention": r"What did (.+) invent\?",
    "river_length": r"How long is the (.+) River, in kilometres\?",
    "ship_builder": r"Who built the ship (.+)\?",
}


def question_of(task: Task) -> str:
    """The question line of a Fictopedia prompt."""
    assert isinstance(task.prompt, str)
    return task.prompt.split("Question: ", 1)[1].split("\n", 1)[0]


def entity_of(task: Task) -> str:
    found = re.fullmatch(KINDS[str(task.metadata["kind"])], question_of(task))
    assert found, question_of(task)
    return found.group(1)


def short_task(task: Task) -> dict[str, Any]:
    """The task with the recipe's short prompt (same reference, tools and metadata)."""
    row = task.model_dump(mode="json")
    row["prompt"] = f"Question: {question_of(task)}\n{INSTRUCTION}"
    row["metadata"] = {**row["metadata"], "entity": entity_of(task)}
    return row


def call(query: str) -> str:
    arguments = {"query": query, "k": K}
    return f"<tool_call>{json.dumps({'name': 'search', 'arguments': arguments})}</tool_call>"


def split(tasks: list[Task], rng: random.Random) -> tuple[list[Task], list[Task]]:
    """Training and held-out tasks: a quarter of each kind's entities held out."""
    train, held = [], []
    for kind in KINDS:
        of_kind = [t for t in tasks if t.metadata["kind"] == kind]
        chosen = set(rng.sample(range(len(of_kind)), len(of_kind) // HELD_OUT_SHARE))
        for i, task in enumerate(of_kind):
            (held if i in chosen else train).append(task)
    return train, held


def episode(task: Task, search: Any) -> dict[str, Any]:
    """The scripted episode: search the entity's name, then answer from the document and
    cite it."""
    name = entity_of(task)
    found = search(name, K)[0]
    assert found["id"] == task.reference["support"][0], (task.id, found["id"])
    replies = [call(name), f"<answer>{task.reference['answers'][0]}</answer> [{found['id']}]"]
    turns = [{"role": "assistant", "content": reply} for reply in replies]
    return {"task_id": task.id, "completion": turns}


def main() -> None:
    rng = random.Random(20261207)
    search = make_search(load_index())
    tasks = [t for t in fictopedia_tasks() if t.metadata["hops"] == 1]
    train, held = split(tasks, rng)
    warmup = [episode(task, search) for task in train]
    write_jsonl(HERE / "tasks.jsonl", [short_task(t) for t in train])
    write_jsonl(HERE / "heldout.jsonl", [short_task(t) for t in held])
    write_jsonl(HERE / "warmup.jsonl", warmup)
    print(f"wrote {len(train)} training tasks, {len(held)} held-out, {len(warmup)} episodes")


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
