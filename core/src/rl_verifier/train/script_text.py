"""Text for the scripts ``rlv new`` writes: each setting's words, docstring escaping and
wrapping (the scripts must pass ruff check at the repository's line length)."""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path

from rl_verifier.discovery.losses import policy_losses

LINE_LENGTH = 100  # the repository's ruff line length

BASE_COMMENTS = {
    "base_model": "Base model that gets a LoRA adapter",
    "backend": "tinker: the hosted API (needs TINKER_API_KEY); local: rlv serve on this machine",
    "lora_rank": "LoRA rank",
    "learning_rate": "Adam learning rate",
    "steps": "Optimizer steps",
    "groups_per_step": "Tasks per step",
    "group_size": "Samples per task; advantages compare the samples of one task",
    "max_tokens": "Longest completion, in tokens",
    "temperature": "Sampling temperature",
    "loss": "Policy loss: {losses}",
    "reward": "A verifier name or a reward spec such as '0.8*a + 0.2*b'",
    "tasks": "A tasks JSONL file (relative to this file), or taskset:NAME from a plugin",
    "environment": "Episode shape: single_turn, or a multi-turn tool environment",
    "max_turns": "Model turns per episode (tool calls happen between turns)",
    "save_every": "Save a resumable checkpoint every N steps",
    "run_dir": "Logs and checkpoints (relative to this file); {time} becomes the start time",
}


def comments() -> dict[str, str]:
    """Each setting's comment in a written script; the loss line lists today's losses (read
    on call, so that importing this module discovers no plugins)."""
    losses = ", ".join(policy_losses())
    return {**BASE_COMMENTS, "loss": BASE_COMMENTS["loss"].format(losses=losses)}


def command(script: Path) -> str:
    """``python SCRIPT``, with the path as given unless that makes the docstring too long."""
    text = doc_escape(f"python {shlex.quote(script.as_posix())}")
    return text if len(text) <= LINE_LENGTH - 40 else f"python {script.name}"


def wrap(text: str, indent: str, subsequent: str | None = None) -> str:
    """Escape for a docstring and wrap to the line length; an over-long word gets its own line."""
    return textwrap.fill(
        doc_escape(text),
        width=LINE_LENGTH,
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def doc_escape(text: str) -> str:
    """Make ``text`` safe inside a plain triple-quoted docstring, ASCII only (ruff RUF002)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) > 127:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)
