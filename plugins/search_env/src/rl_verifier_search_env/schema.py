"""The search tool's JSON Schema, in OpenAI function format, and its argument limits."""

from __future__ import annotations

from typing import Any

TOOL_NAME = "search"
DEFAULT_K = 3
MAX_K = 10
SNIPPET_CHARS = 200

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
                "query": {"type": "string", "minLength": 1, "description": "Search keywords."},
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
