"""The search tool's JSON Schema, in OpenAI function format, and its argument limits."""

from __future__ import annotations

from typing import Any

TOOL_NAME = "search"
DEFAULT_K = 3
MAX_K = 10
SNIPPET_CHARS = 200
# The query is the model's text: its cost is BM25 work per term, linear in the corpus for the
# rank_bm25 backend. A search is a few keywords; longer queries are refused (an error result
# the model sees) before they are tokenized.
MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 32

SEARCH_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search the encyclopedia (BM25). Returns up to k documents, best first, "
            f"each with its id, title and the first {SNIPPET_CHARS} characters of its text."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "description": f"Search keywords (at most {MAX_QUERY_TERMS} words).",
                },
                "k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_K,
                    "default": DEFAULT_K,
                    "description": "How many documents to return.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
