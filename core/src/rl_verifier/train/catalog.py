"""Base models ``rlv new`` knows: their chat-template family and a suggested LoRA learning rate.

The rates follow Tinker's LoRA guidance, also its starting point for RL:
``LR = 5e-5 * 10 * (2000 / hidden_size) ** P`` with ``P`` = 0.781 for Llama and 0.0775 for
the other families, rounded to two significant digits. A name missing here still trains;
the builder only warns, since the catalogue cannot know every model a service offers.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

LLAMA_EXPONENT = 0.781
OTHER_EXPONENT = 0.0775
THINKS = "thinks in <think>...</think> before answering; allow max_tokens for it"
REASONS = "reasons in an analysis channel before answering; allow max_tokens for it"
BASE = "a base model (not chat-tuned): expect low rewards until it learns the format"


@dataclass(frozen=True)
class ModelEntry:
    """One base model: where it runs, how it chats, how fast to train it."""

    name: str
    family: str  # chat-template family: qwen3, qwen3.5, llama3, gpt-oss, deepseek-v3, chatml
    learning_rate: float  # suggested LoRA learning rate
    backends: tuple[str, ...] = ("tinker",)
    note: str = ""  # something to know before training it, shown as a warning


def suggested_lr(hidden_size: int, family: str) -> float:
    """Tinker's LoRA learning-rate formula, to two significant digits."""
    exponent = LLAMA_EXPONENT if family == "llama3" else OTHER_EXPONENT
    return float(f"{5e-4 * (2000 / hidden_size) ** exponent:.2g}")


def _entry(name: str, family: str, hidden_size: int, note: str = "") -> ModelEntry:
    return ModelEntry(name, family, suggested_lr(hidden_size, family), note=note)


CATALOG: tuple[ModelEntry, ...] = (
    _entry("Qwen/Qwen3-4B-Instruct-2507", "qwen3", 2560),
    _entry("Qwen/Qwen3-8B", "qwen3", 4096, THINKS),
    _entry("Qwen/Qwen3-30B-A3B", "qwen3", 2048, THINKS),
    _entry("Qwen/Qwen3-32B", "qwen3", 5120, THINKS),
    _entry("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3", 4096),
    _entry("Qwen/Qwen3.5-9B", "qwen3.5", 4096, THINKS),
    _entry("Qwen/Qwen3.5-27B", "qwen3.5", 5120, THINKS),
    _entry("Qwen/Qwen3.5-35B-A3B", "qwen3.5", 2048, THINKS),
    _entry("meta-llama/Llama-3.1-8B", "llama3", 4096, BASE),
    _entry("meta-llama/Llama-3.1-8B-Instruct", "llama3", 4096),
    _entry("meta-llama/Llama-3.2-1B", "llama3", 2048, BASE),
    _entry("meta-llama/Llama-3.2-3B", "llama3", 3072, BASE),
    _entry("meta-llama/Llama-3.1-70B", "llama3", 8192, BASE),
    _entry("meta-llama/Llama-3.3-70B-Instruct", "llama3", 8192),
    _entry("openai/gpt-oss-20b", "gpt-oss", 2880, REASONS),
    _entry("openai/gpt-oss-120b", "gpt-oss", 2880, REASONS),
    _entry("deepseek-ai/DeepSeek-V3.1", "deepseek-v3", 7168),
    ModelEntry("rlv/tiny-chat", "chatml", 2e-3, backends=("local",)),
)

_BY_NAME = {entry.name: entry for entry in CATALOG}


def lookup(name: str) -> ModelEntry | None:
    """The catalogue entry for ``name`` (exact spelling), or None."""
    return _BY_NAME.get(name)


def closest(name: str) -> str | None:
    """The catalogued name ``name`` was most likely meant to be, if any is close."""
    folded = {entry.name.lower(): entry.name for entry in CATALOG}
    if name.lower() in folded:
        return folded[name.lower()]
    match = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.8)
    return folded[match[0]] if match else None
