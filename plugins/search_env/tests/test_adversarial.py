"""Queries whose cost the model controls: refused by size before BM25 sees them.

The query is the model's text; BM25 work grows with its terms (for rank_bm25, each term
scans the corpus: a 1 MB query took 28 s on 5,000 documents). Past ``MAX_QUERY_CHARS`` or
``MAX_QUERY_TERMS`` the tool call fails with an error result the model sees, and the episode
goes on: the model's failure, never a stalled rollout. No timings are asserted.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from rl_verifier import Completion, Status
from rl_verifier.testing import get_plugins
from rl_verifier.train import Renderer, Turn, run_episode
from rl_verifier_retrieval import BM25Index, Document
from rl_verifier_search_env.corpus import load_index
from rl_verifier_search_env.env import SearchTools, make_search
from rl_verifier_search_env.fictopedia import fictopedia_tasks
from rl_verifier_search_env.schema import MAX_QUERY_CHARS, MAX_QUERY_TERMS, SEARCH_TOOL_SCHEMA

TASK = next(t for t in fictopedia_tasks() if t.metadata["kind"] == "ship_builder")

HUGE = [
    ("ship " * 200_000, "MAX_QUERY_CHARS"),  # 1 MB, one repeated term
    (" ".join(f"w{i}" for i in range(100_000)), "MAX_QUERY_CHARS"),  # 100,000 distinct terms
    ("x" * (MAX_QUERY_CHARS + 1), "MAX_QUERY_CHARS"),
    (" ".join(["ship"] * (MAX_QUERY_TERMS + 1)), "MAX_QUERY_TERMS"),
    ("a-" * (MAX_QUERY_CHARS // 2), "MAX_QUERY_TERMS"),  # 500 one-letter words
]


@pytest.fixture(scope="module")
def rank_bm25_index() -> BM25Index:
    """The slow backend: every query term scans every document."""
    docs = [Document(f"d{i}", f"ship w{i} river town {i % 7}") for i in range(2_000)]
    return BM25Index.build(docs, "rank_bm25")


@pytest.mark.parametrize(("query", "limit"), HUGE, ids=lambda v: str(v)[:16])
@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_oversized_queries_are_refused_naming_the_limit(
    query: str, limit: str, backend: str, rank_bm25_index: BM25Index
) -> None:
    index = load_index() if backend == "bm25s" else rank_bm25_index
    with pytest.raises(ValueError, match=limit):
        make_search(index)(query=query)


def test_queries_at_the_limits_still_search(rank_bm25_index: BM25Index) -> None:
    at_terms = " ".join(["ship"] * MAX_QUERY_TERMS)
    at_chars = "ship " + "s" * (MAX_QUERY_CHARS - 5)
    for index in (load_index(), rank_bm25_index):
        assert len(make_search(index)(query=at_terms)) == 3
        assert make_search(index)(query=at_chars)  # "ship" still matches


def test_the_schema_states_the_length_limit() -> None:
    query = SEARCH_TOOL_SCHEMA["function"]["parameters"]["properties"]["query"]
    assert query["maxLength"] == MAX_QUERY_CHARS
    assert TASK.reference["tools"] == [SEARCH_TOOL_SCHEMA]


class Script:
    def __init__(self, renderer: Renderer, replies: list[str]) -> None:
        self.renderer, self.replies, self.calls = renderer, replies, 0

    async def __call__(self, prompt: list[int]) -> Turn:
        text = self.replies[self.calls]
        self.calls += 1
        sampled = [*self.renderer.encode(text), *self.renderer.stop()[:1]]
        return Turn(sampled, [-0.1] * len(sampled), self.renderer.response_text(sampled))


def call(**arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': 'search', 'arguments': arguments})}</tool_call>"


def test_an_episode_with_an_oversized_query_goes_on_and_is_scored(renderer: Renderer) -> None:
    """An oversized query gets an error result, the model answers next turn, and the
    ``tool_calls`` verifier (when installed) judges the episode: ``ok``, never an error.
    (2,000 characters here: the megabyte cases above stop at the same check.)"""
    answer = TASK.reference["answers"][0]
    replies = [call(query="ship " * 400), f"<answer>{answer}</answer>"]
    env = SearchTools(load_index(), max_turns=3)
    result = asyncio.run(run_episode(env, TASK, renderer, Script(renderer, replies), 1 << 16))
    assert (result.turns, result.end_reason) == (2, "done")
    tool = next(m for m in result.messages if m["role"] == "tool")
    assert "MAX_QUERY_CHARS" in json.loads(tool["content"])["error"]
    assert "MAX_QUERY_CHARS" in result.tool_calls[0]["error"]

    registry = get_plugins().registry
    if "tool_calls" not in registry:
        pytest.skip("tool_calls verifier not installed (pip install -e plugins/tool_calls)")
    completion = Completion(task_id=TASK.id, completion=result.messages[len(env.start(TASK)) :])
    verdict = registry.get("tool_calls").cls().verify(TASK, completion)
    assert verdict.status is Status.OK, verdict.error
