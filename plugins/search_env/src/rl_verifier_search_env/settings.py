"""The ``search_tools`` environment's settings: ``environment_config`` in a training TOML."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class SearchSettings(BaseModel):
    """``[environment_config]`` of a run with ``environment = "search_tools"``."""

    model_config = ConfigDict(extra="forbid")

    corpus: Path | None = Field(
        default=None,
        description="A JSONL corpus or a saved BM25 index folder; default: "
        "$RLV_SEARCH_CORPUS, else the bundled fictopedia corpus.",
    )
    system_prompt: str | None = Field(
        default=None,
        description="The system prompt's instructions; default: the environment's own "
        "(search, cite ids in square brackets). Tasks' own system messages come first.",
    )
    describe_tools: bool = Field(
        default=True,
        description="Append the generic tool-call format and each tool's signature to the "
        "system prompt; false when system_prompt says how to call search itself (fewer "
        "prompt tokens).",
    )
