"""The ``retrieval-example`` task set: short questions, each with ALCE-style inline docs."""

from __future__ import annotations

from typing import Any

from rl_verifier import Task

PROMPT = (
    "Answer the question using the documents below. Give only the answer, then cite the "
    "documents that support it as [1], [2], ...\n\n{docs}\n\nQuestion: {question}"
)

EXAMPLES: list[dict[str, Any]] = [
    {
        "question": "What is the capital of France?",
        "answers": ["Paris"],
        "docs": [
            ("France", "Paris is the capital and largest city of France."),
            ("Paris", "Paris has been the seat of the French government since 987."),
            ("Lyon", "Lyon is the third-largest city of France."),
            ("Berlin", "Berlin is the capital of Germany."),
        ],
    },
    {
        "question": "Who wrote the novel 1984?",
        "answers": ["George Orwell", "Orwell", "Eric Arthur Blair"],
        "docs": [
            ("Nineteen Eighty-Four", "Nineteen Eighty-Four is a 1949 novel by George Orwell."),
            ("Aldous Huxley", "Aldous Huxley wrote Brave New World in 1932."),
            ("George Orwell", "Eric Arthur Blair, known as George Orwell, was an English writer."),
        ],
    },
    {
        "question": "What is the chemical symbol of gold?",
        "answers": ["Au"],
        "docs": [
            ("Silver", "Silver has the chemical symbol Ag."),
            ("Gold", "Gold is a chemical element with the symbol Au and atomic number 79."),
            ("Copper", "Copper has the symbol Cu."),
        ],
    },
    {
        "question": "Which planet is known as the Red Planet?",
        "answers": ["Mars"],
        "docs": [
            ("Venus", "Venus is the second planet from the Sun."),
            ("Mars", "Mars is often called the Red Planet because of iron oxide on its surface."),
            ("Jupiter", "Jupiter is the largest planet in the Solar System."),
        ],
    },
    {
        "question": "In which year did Apollo 11 land on the Moon?",
        "answers": ["1969"],
        "docs": [
            ("Apollo 11", "Apollo 11 landed the first humans on the Moon on 20 July 1969."),
            ("Apollo 13", "Apollo 13 launched in 1970 and did not land."),
            ("Sputnik", "Sputnik 1 was launched in 1957."),
        ],
    },
]


def example_tasks() -> list[Task]:
    """Five tasks without a support set: a cited doc supports when it contains the answer."""
    tasks = []
    for number, example in enumerate(EXAMPLES, start=1):
        docs = [{"title": title, "text": text} for title, text in example["docs"]]
        shown = "\n".join(
            f"[{i}] ({doc['title']}) {doc['text']}" for i, doc in enumerate(docs, start=1)
        )
        tasks.append(
            Task(
                id=f"retrieval-example-{number}",
                prompt=PROMPT.format(docs=shown, question=example["question"]),
                verifier="retrieval",
                reference={"answers": example["answers"], "docs": docs},
            )
        )
    return tasks
