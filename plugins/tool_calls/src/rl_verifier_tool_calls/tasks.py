"""The ``tool_calls-example`` task set: questions a search tool can answer, with citations."""

from __future__ import annotations

import json
from typing import Any

from rl_verifier import Task

SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search a small encyclopedia; returns passages with ids.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 10},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

QUESTIONS = [
    ("eiffel", "In which year was the Eiffel Tower completed?", ["1889"]),
    (
        "everest",
        "Which country's border runs over the summit of Everest besides Nepal?",
        ["China", "Tibet"],
    ),
    ("water", "What is the chemical formula of water?", ["H2O"]),
    ("moon", "In which year did Apollo 11 land on the Moon?", ["1969"]),
    ("python", "Who created the Python programming language?", ["Guido van Rossum"]),
]

INSTRUCTIONS = (
    "Use the search tool if you need to, then answer briefly and cite the passage ids you "
    "used in square brackets, like [r1]."
)


def example_tasks() -> list[Task]:
    """A few search questions with gold answers and the search tool declared."""
    return [
        Task(
            id=f"tool_calls-{key}",
            prompt=[
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": question},
            ],
            verifier="tool_calls",
            reference={"answers": answers, "tools": [SEARCH_TOOL]},
        )
        for key, question, answers in QUESTIONS
    ]


def eiffel_task() -> Task:
    """The first example task: gold answer 1889, the search tool declared."""
    return example_tasks()[0]


def search_episode(
    calls: int = 1,
    answer: str = "1889 [r1]",
    returned: tuple[str, ...] = ("r1",),
    arguments: str = '{"query": "Eiffel Tower completed"}',
) -> list[dict[str, Any]]:
    """A trajectory in ``rlv train``'s format: ``calls`` search turns, each answered by a tool
    message whose documents carry the ``returned`` ids, then the final ``answer``."""
    docs = [{"id": ident, "text": f"passage {ident}: completed in 1889"} for ident in returned]
    messages: list[dict[str, Any]] = []
    for _ in range(calls):
        call = f'<tool_call>{{"name": "search", "arguments": {arguments}}}</tool_call>'
        messages.append({"role": "assistant", "content": call})
        messages.append({"role": "tool", "name": "search", "content": json.dumps(docs)})
    messages.append({"role": "assistant", "content": answer})
    return messages
