"""The ``search_tools`` environment: core ``ToolUse`` with one BM25 ``search`` tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_verifier.train import ToolUse, TrainConfig
from rl_verifier_retrieval import BM25Index, tokenize
from rl_verifier_search_env.corpus import load_index
from rl_verifier_search_env.schema import (
    DEFAULT_K,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    SEARCH_TOOL_SCHEMA,
    SNIPPET_CHARS,
)
from rl_verifier_search_env.settings import SearchSettings

__all__ = ["SEARCH_TOOL_SCHEMA", "SYSTEM_PROMPT", "SearchTools", "make_env", "make_search"]

SYSTEM_PROMPT = (
    "You answer questions by searching an encyclopedia with the search tool. Every result "
    "has an id; cite the documents you used by id in square brackets, like [fx-012]."
)

SearchFn = Callable[..., list[dict[str, str]]]


def make_search(index: BM25Index) -> SearchFn:
    """The tool function over ``index``; bad arguments raise, which the model sees."""

    def search(query: str, k: int = DEFAULT_K) -> list[dict[str, str]]:
        """Search the encyclopedia; returns [{id, title, text}] for the k best documents."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("'query' must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"'k' must be an integer, got {k!r}")
        if not 1 <= k <= MAX_K:
            raise ValueError(f"'k' must be between 1 and {MAX_K}, got {k}")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(
                f"'query' is {len(query)} characters, longer than MAX_QUERY_CHARS "
                f"({MAX_QUERY_CHARS})"
            )
        if (terms := len(tokenize(query))) > MAX_QUERY_TERMS:
            raise ValueError(
                f"'query' has {terms} words, more than MAX_QUERY_TERMS ({MAX_QUERY_TERMS})"
            )
        return [
            {"id": doc.id, "title": doc.title, "text": doc.text[:SNIPPET_CHARS]}
            for doc, _score in index.search(query, k)
        ]

    return search


class SearchTools(ToolUse):
    """Multi-turn search: the model calls ``search`` until it answers or runs out of turns."""

    name = "search_tools"

    def __init__(
        self,
        index: BM25Index,
        max_turns: int = 4,
        system_prompt: str | None = SYSTEM_PROMPT,
        max_calls_per_turn: int = 8,
        describe: bool = True,
    ) -> None:
        self.index = index
        super().__init__(
            {"search": make_search(index)},
            max_turns=max_turns,
            system_prompt=system_prompt,
            describe=describe,
            max_calls_per_turn=max_calls_per_turn,
        )

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools in OpenAI function format, as task references carry them."""
        return [SEARCH_TOOL_SCHEMA]


def make_env(config: TrainConfig, settings: SearchSettings | None = None) -> SearchTools:
    """The environment for a run: ``config.max_turns`` turns over the configured corpus
    (``settings.corpus``, else :func:`corpus_source`), with the settings' system prompt."""
    settings = settings or SearchSettings()
    return SearchTools(
        load_index(settings.corpus),
        max_turns=config.max_turns,
        system_prompt=settings.system_prompt or SYSTEM_PROMPT,
        describe=settings.describe_tools,
    )
