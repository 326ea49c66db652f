"""Trained weights you can take away: a checkpoint as a standard peft LoRA adapter.

An export holds exactly ``adapter_model.safetensors`` and ``adapter_config.json``, whose
``base_model_name_or_path`` is the base model the adapter was trained on, so
``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), folder)`` (or any
server that loads peft adapters) reproduces the model ``rlv serve`` sampled from. With age
recipients each file is stored encrypted to them instead, as ``NAME.age`` (decrypt with
``age -d``), which is what ``tinker_cookbook.weights.download`` asks for.

``save_weights_external`` and ``rlv export`` both write through ``export_adapter``; it
reads only files, so it needs neither torch nor a running server.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rl_verifier import UserError, publish_directory

WEIGHTS_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
EXPORTED_FILES = (WEIGHTS_FILE, CONFIG_FILE)
AGE_SUFFIX = ".age"
MAX_RECIPIENTS = 10


def parse_recipients(values: object) -> list[Any]:
    """age recipients (``age1...`` keys or SSH public keys), or a user error naming the bad
    one. None or an empty list: no encryption."""
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UserError("age_encryption_recipients must be a list of strings")
    if len(values) > MAX_RECIPIENTS:
        raise UserError(f"at most {MAX_RECIPIENTS} age recipients, got {len(values)}")
    pyrage = _pyrage()
    parsed: list[Any] = []
    for value in values:
        kinds = (pyrage.x25519.Recipient, pyrage.ssh.Recipient)
        for kind in kinds:
            try:
                parsed.append(kind.from_str(value.strip()))
                break
            except Exception:  # noqa: BLE001 - pyrage raises its own error types
                continue
        else:
            raise UserError(f"not an age recipient (age1... or an SSH public key): {value:.60}")
    return parsed


def export_adapter(
    source: Path, target: Path, base_model: str, recipients: Sequence[Any] = ()
) -> list[str]:
    """Write the adapter in ``source`` (a checkpoint folder) as a standard peft adapter to
    the folder ``target``, replacing it whole; the names of the files written."""
    with publish_directory(target, replace=True) as staging:
        return write_export(source, staging, base_model, recipients)


def write_export(
    source: Path, folder: Path, base_model: str, recipients: Sequence[Any] = ()
) -> list[str]:
    """The files of ``export_adapter``, written into ``folder`` (created if needed)."""
    for name in EXPORTED_FILES:
        if not (source / name).is_file():
            raise UserError(f"{source} holds no LoRA adapter ({name} is missing)")
    config: dict[str, Any] = json.loads((source / CONFIG_FILE).read_text())
    config["base_model_name_or_path"] = base_model
    config["task_type"] = "CAUSAL_LM"
    config["inference_mode"] = True
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    contents = {
        WEIGHTS_FILE: (source / WEIGHTS_FILE).read_bytes(),
        CONFIG_FILE: (json.dumps(config, indent=2, sort_keys=True) + "\n").encode(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in contents.items():
        if recipients:
            name, data = name + AGE_SUFFIX, _pyrage().encrypt(data, list(recipients))
        (folder / name).write_bytes(data)
        written.append(name)
    return written


def _pyrage() -> Any:
    """The age implementation (pyrage ships no type information)."""
    return importlib.import_module("pyrage")
