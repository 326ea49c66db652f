"""The generated Fictopedia corpus and task sets: shipped = generated, answerable, two-hop."""

from __future__ import annotations

import json
from collections import Counter

from rl_verifier import normalise_answer
from rl_verifier.testing import get_plugins
from rl_verifier_search_env.fictopedia import TASKS_PATH, example_tasks, fictopedia_tasks
from rl_verifier_search_env.generate import DATA_DIR, render
from rl_verifier_search_env.schema import SEARCH_TOOL_SCHEMA
from rl_verifier_search_env.world import build_world, title

CORPUS = {
    row["id"]: row for row in map(json.loads, (DATA_DIR / "corpus.jsonl").read_text().splitlines())
}


def test_shipped_files_equal_the_generator_output() -> None:
    generated = render()
    assert set(generated) == {"corpus.jsonl", TASKS_PATH.name}
    for name, content in generated.items():
        assert (DATA_DIR / name).read_text(encoding="utf-8") == content, (
            f"{name} is stale: run python -m rl_verifier_search_env.generate"
        )


def test_generator_is_deterministic_in_its_seed() -> None:
    assert render() == render()
    assert render("another seed") != render()


def test_corpus_has_200_documents_with_unique_names() -> None:
    assert sorted(CORPUS) == [f"fx-{n:03d}" for n in range(1, 201)]
    assert Counter(e.kind for e in build_world().entities()) == {
        "town": 60,
        "inventor": 50,
        "river": 40,
        "ship": 50,
    }
    titles = [title(e).lower() for e in build_world().entities()]
    assert len(set(titles)) == len(titles)
    assert all(len(row["text"]) <= 200 for row in CORPUS.values())  # one snippet holds all


def test_every_task_is_answerable_from_its_support_documents() -> None:
    tasks = fictopedia_tasks()
    assert len(tasks) == 340 and len({t.id for t in tasks}) == len(tasks)
    for task in tasks:
        ref = task.reference
        assert set(ref) == {"answers", "support", "tools"}
        assert ref["tools"] == [SEARCH_TOOL_SCHEMA]
        assert task.verifier == "tool_calls"
        assert isinstance(task.prompt, str) and "[fx-012]" in task.prompt
        assert len(ref["support"]) == task.metadata["hops"]
        last = normalise_answer(CORPUS[ref["support"][-1]]["text"])
        assert any(normalise_answer(a) in last for a in ref["answers"]), task.id


def test_two_hop_questions_need_both_documents() -> None:
    two_hop = [t for t in fictopedia_tasks() if t.metadata["hops"] == 2]
    assert len(two_hop) == 140
    for task in two_hop:
        first, second = (CORPUS[d] for d in task.reference["support"])
        assert first["id"] != second["id"]
        answer = task.reference["answers"][0].lower()
        assert answer not in first["text"].lower(), task.id  # not answerable from hop one
        # The hops are linked by a name the question does not give: hop one names hop two's
        # subject (ship -> its port or builder), or hop two names hop one's (town -> founder).
        names = [d["title"].removesuffix(" River").removesuffix(" (ship)") for d in (first, second)]
        bridge = names[1] if names[1] in first["text"] else names[0]
        assert bridge in first["text"] and bridge in second["text"], task.id
        assert isinstance(task.prompt, str) and bridge not in task.prompt, task.id


def test_search_example_is_a_small_mixed_subset() -> None:
    examples = example_tasks()
    every = {t.id: t for t in fictopedia_tasks()}
    assert len(examples) == 16
    assert all(every[t.id] == t for t in examples)
    assert Counter(t.metadata["hops"] for t in examples) == {1: 8, 2: 8}
    assert get_plugins().task_sets["search-example"].value() == examples
