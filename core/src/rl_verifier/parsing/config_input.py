"""Verifier settings from the command line (``KEY=VALUE``) and from TOML/JSON files."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rl_verifier.base.errors import UserError


def parse_value(raw: str) -> Any:
    """JSON when it parses (numbers, booleans, lists), else the plain string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    """``a=1``, ``name.key=v`` -> nested dict."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--config expects KEY=VALUE, got '{pair}'")
        *parents, leaf = key.strip().split(".")
        node = result
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UserError(f"--config '{key}': '{part}' is already set to a value")
            node = child
        node[leaf] = parse_value(raw)
    return result


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: malformed config: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a table of settings, got {type(data).__name__}")
    return data


def merge_configs(base: dict[str, Any], pairs: Iterable[str]) -> dict[str, Any]:
    """File settings overridden by command-line pairs, merged key by key."""

    def merge(into: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        out = dict(into)
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
        return out

    return merge(base, parse_pairs(pairs))
