"""``rlv new --standalone``: one runnable file with the whole loop and every Tinker call.

``render_standalone`` fills ``standalone_template.STANDALONE`` with the settings ``rlv new``
resolved (the same values its TOML would hold) and the defaults of ``TrainConfig`` and
``rl_verifier.discovery.losses`` for what the TOML leaves out.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from rl_verifier.discovery.losses import get_loss
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.script_text import LINE_LENGTH, command, comments, doc_escape, wrap
from rl_verifier.train.standalone_template import STANDALONE

# (constant, setting, annotation): the file's settings, in order.
SETTINGS = (
    ("BASE_MODEL", "base_model", ""),
    ("LORA_RANK", "lora_rank", ""),
    ("LEARNING_RATE", "learning_rate", ""),
    ("STEPS", "steps", ""),
    ("GROUPS_PER_STEP", "groups_per_step", ""),
    ("GROUP_SIZE", "group_size", ""),
    ("MAX_TOKENS", "max_tokens", ""),
    ("TEMPERATURE", "temperature", ""),
    ("LOSS", "loss", "Final"),
    ("LOSS_CONFIG", "loss_config", "dict[str, float]"),
    ("ADVANTAGE", "advantage", "Final"),
    ("REWARD", "reward", ""),
    ("VERIFIER_CONFIG", "verifier_config", "dict[str, Any]"),
    ("TASKS", "tasks", ""),
    ("SAVE_EVERY", "save_every", ""),
    ("SEED", "seed", ""),
)
# What each datum input is, by the name the loss reads it under (rl_verifier.discovery.losses).
INPUTS = {
    "target_tokens": 'types.TensorData(data=tokens[1:], dtype="int64", shape=[n])',
    "logprobs": 'types.TensorData(data=logprobs, dtype="float32", shape=[n])',
    "advantages": 'types.TensorData(data=advantages, dtype="float32", shape=[n])',
}
PRIMITIVES = (
    "create_lora_training_client (the LoRA adapter), save_weights_and_get_sampling_client (a "
    "sampler on the current weights), sample (on-policy rollouts), forward_backward (LoRA "
    "gradients), optim_step (Adam on the adapter), save_state (checkpoint weights + "
    "optimizer), create_training_client_from_state_with_optimizer (resume)."
)
LEFT_OUT = (
    "Left out, compared with the loop `rlv new` writes without --standalone (rlv train): the "
    "run directory (metrics.jsonl, samples.jsonl, checkpoints.jsonl) and its report (rlv "
    "report); the cross_entropy warm start; multi-turn environments (tool use); sampling and "
    "scoring the next step while this one trains (sampling_ahead); failed_scores = zero; "
    "stopping when too many samples fail to score (max_failed_share); other executors "
    "(Ray); and checking the whole setup before the first call."
)


def standalone_settings(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (the TOML's settings) with TrainConfig's defaults for the rest."""
    out = {}
    for _, key, _ in SETTINGS:
        field = TrainConfig.model_fields[key]
        out[key] = values[key] if key in values else field.get_default(call_default_factory=True)
    return out


def render_standalone(
    script: Path, values: dict[str, Any], family: str | None, local_only: bool, lr_source: str
) -> str:
    """The file's text for ``values`` (as ``render_loop`` resolved them)."""
    settings = standalone_settings(values)
    return STANDALONE.substitute(
        docstring=_docstring(script, settings, family, local_only),
        settings=_settings_block(settings, family, lr_source),
        loss_inputs="\n".join(
            f'            "{name}": {INPUTS[name]},' for name in get_loss(settings["loss"]).inputs
        ),
    )


def _comments(settings: dict[str, Any], family: str | None, lr_source: str) -> dict[str, str]:
    loss = get_loss(settings["loss"])
    taken = ", ".join(f"{k} (default {v:g})" for k, v in loss.config.items())
    notes = comments()
    notes["base_model"] += f" ({family} chat template)" if family else " (not catalogued)"
    notes["learning_rate"] += f" ({lr_source})"
    notes["loss_config"] = (
        f"loss_fn_config of LOSS; empty: the loss's defaults. {loss.name} takes "
        + (taken or "no settings")
    )
    notes["advantage"] = TrainConfig.model_fields["advantage"].description or ""
    notes["verifier_config"] = TrainConfig.model_fields["verifier_config"].description or ""
    notes["save_every"] = "Save a resumable checkpoint every N steps, and at the end"
    notes["seed"] = "Seed of the data order, the sampling and the adapter's initialisation"
    return notes


def _settings_block(settings: dict[str, Any], family: str | None, lr_source: str) -> str:
    comments = _comments(settings, family, lr_source)
    lines: list[str] = []
    for name, key, annotation in SETTINGS:
        text = comments[key].rstrip(".") + "."
        lines += textwrap.wrap(
            text, LINE_LENGTH, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False
        )
        lines.append(_assignment(name, annotation, settings[key]))
    return "\n".join(lines)


def _assignment(name: str, annotation: str, value: Any) -> str:
    """``NAME = value``; a string too long for one line is split into parts in parentheses."""
    target = f"{name}: {annotation}" if annotation else name
    line = f"{target} = {_literal(value)}"
    if len(line) <= LINE_LENGTH or not isinstance(value, str):
        return line
    parts, part = [], ""
    for ch in value:
        if len(_literal(part + ch)) > LINE_LENGTH - 4:
            parts.append(part)
            part = ""
        part += ch
    parts.append(part)
    return "\n".join([f"{target} = (", *(f"    {_literal(p)}" for p in parts), ")"])


def _literal(value: Any) -> str:
    """A Python literal: JSON's string escapes are Python's, and ASCII only."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _docstring(script: Path, settings: dict[str, Any], family: str | None, local_only: bool) -> str:
    run = command(script)
    target = "verifier" if settings["reward"].isidentifier() else "reward"
    model = settings["base_model"] + (f" ({family} chat template)" if family else "")
    rows = [
        (target, settings["reward"]),
        ("tasks", settings["tasks"]),
        ("model", f"{model}, LoRA rank {settings['lora_rank']}"),
        ("loss", settings["loss"]),
        (
            "schedule",
            f"{settings['steps']} steps of {settings['groups_per_step']} tasks x "
            f"{settings['group_size']} samples, learning rate {settings['learning_rate']:g}",
        ),
    ]
    title = f"Train {settings['base_model']} with RL to pass the `{settings['reward']}` {target}."
    checkpoint = "tinker://.../step-" + f"{settings['save_every']:06d}"
    parts = [
        wrap(title, ""),
        "",
        *(wrap(f"{label:<9} {text}", "    ", "              ") for label, text in rows),
        "",
        wrap(
            "The whole loop is in this one file. Each step samples a group of completions of "
            "each task from the current weights, scores them with the verifier, compares each "
            "reward with its group's "
            "(group-relative advantages) and trains the LoRA adapter on them. The settings are "
            "the constants below. For the same SEED the first step's rewards are rlv train's.",
            "",
        ),
        "",
        wrap("Tinker primitives used in this file: " + PRIMITIVES, ""),
        "",
        *_run_lines(run, settings["base_model"], local_only),
        f"Resume from a checkpoint it printed (one every {settings['save_every']} steps and at "
        "the end):",
        f"    {run} --resume {checkpoint}",
        "",
        wrap(LEFT_OUT, ""),
    ]
    return "\n".join(parts)


def _run_lines(run: str, model: str, local_only: bool) -> list[str]:
    """How to start it: on Tinker, and against an ``rlv serve`` on this machine."""
    preload = "" if model == "rlv/tiny-chat" else f" --preload {doc_escape(model)}"
    serve = f"    rlv serve --port 8000{preload}"
    if len(serve) > LINE_LENGTH:
        serve = "    rlv serve --port 8000 --preload MODEL"
    local = [
        "On this machine (needs rl-verifier[local]): rlv serve in another terminal, then",
        serve,
        "    export TINKER_BASE_URL=http://127.0.0.1:8000 TINKER_API_KEY=tml-local",
        f"    {run}",
    ]
    if local_only:
        return [f"{doc_escape(model)} trains on this machine only.", *local]
    return ["On Tinker:", f"    TINKER_API_KEY=... {run}", *local]
