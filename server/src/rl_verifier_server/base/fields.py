"""Typed reads of JSON request fields: a wrong or missing field is a user error naming it."""

from __future__ import annotations

import json
import math
from typing import Any

from rl_verifier import UserError
from rl_verifier_server.base.limits import MAX_STOP_CHARS, MAX_STOP_SEQUENCES

MISSING: Any = object()
MAX_INT = 2**63 - 1


def _get(data: dict[str, Any], key: str, default: Any) -> Any:
    value = data.get(key)
    if value is None:
        if default is MISSING:
            raise UserError(f"the request needs '{key}'")
        return default
    return value


def text(data: dict[str, Any], key: str, default: Any = MISSING) -> Any:
    """A string field (``default`` when absent or null)."""
    value = _get(data, key, default)
    if value is not default and not isinstance(value, str):
        raise UserError(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def shown(value: object) -> str:
    """A client's value in an error message, cut short (a JSON number may have 400 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def integer(
    data: dict[str, Any], key: str, default: Any = MISSING, minimum: int = -MAX_INT - 1
) -> Any:
    """An integer field (JSON number without a fraction; not a boolean)."""
    value = _get(data, key, default)
    if value is default:
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"'{key}' must be an integer, got {shown(value)}")
    if not minimum <= value <= MAX_INT:
        raise UserError(f"'{key}' must be between {minimum} and {MAX_INT}, got {shown(value)}")
    return value


def number(data: dict[str, Any], key: str, default: Any = MISSING) -> Any:
    """A finite number field, as a float (an integer too large for one is refused)."""
    value = _get(data, key, default)
    if value is default:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"'{key}' must be a number, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer of more than 308 digits
        raise UserError(f"'{key}' is too large a number, got {shown(value)}") from None
    if not math.isfinite(number):
        raise UserError(f"'{key}' must be a finite number, got {shown(value)}")
    return number


def flag(data: dict[str, Any], key: str, default: bool = False) -> bool:
    value = _get(data, key, default)
    if not isinstance(value, bool):
        raise UserError(f"'{key}' must be true or false, got {value!r:.40}")
    return value


def mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    """An object field; absent or null is an empty object."""
    value = _get(data, key, {})
    if not isinstance(value, dict):
        raise UserError(f"'{key}' must be an object, got {type(value).__name__}")
    return value


def prompt_tokens(prompt: dict[str, Any]) -> list[int]:
    tokens: list[int] = []
    chunks = prompt.get("chunks") or []
    if not isinstance(chunks, list):
        raise UserError("'prompt.chunks' must be a list")
    for chunk in chunks:
        if not isinstance(chunk, dict):
            raise UserError("each prompt chunk must be an object")
        if chunk.get("type", "encoded_text") != "encoded_text":
            raise UserError(f"prompt chunks of type '{chunk.get('type')}' are not supported")
        values = chunk.get("tokens")
        if not isinstance(values, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in values
        ):
            raise UserError("prompt chunk 'tokens' must be a list of integers")
        tokens.extend(values)
    if not tokens:
        raise UserError("the prompt has no tokens")
    return tokens


def stop_condition(
    stop: object, max_count: int = MAX_STOP_SEQUENCES
) -> str | list[str] | list[int] | None:
    """``SamplingParams.stop``: None, a string, or a list of at most ``max_count`` strings
    (each 1 to ``MAX_STOP_CHARS`` characters) or of token ids (each >= 0)."""
    if stop is None:
        return None
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, list):
        raise UserError("'stop' must be a string, a list of strings or a list of token ids")
    if len(items) > max_count:
        raise UserError(f"'stop' may hold at most {max_count} entries, got {len(items)}")
    if all(isinstance(s, str) for s in items):
        if not all(1 <= len(s) <= MAX_STOP_CHARS for s in items):
            raise UserError(f"each 'stop' string must have 1 to {MAX_STOP_CHARS} characters")
        return stop if isinstance(stop, str) else [str(s) for s in items]
    if all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_INT for s in items):
        return [int(s) for s in items]
    raise UserError("'stop' must be a string, a list of strings or a list of token ids (each >= 0)")


MAX_METADATA_BYTES = 64 * 1024


def metadata(data: dict[str, Any], key: str = "user_metadata") -> dict[str, str] | None:
    """A client's metadata: string keys, each value kept as a string (other JSON values as
    their JSON text), at most ``MAX_METADATA_BYTES`` in all."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserError(f"'{key}' must be an object, got {type(value).__name__}")
    result = {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    if len(json.dumps(result)) > MAX_METADATA_BYTES:
        raise UserError(f"'{key}' is larger than {MAX_METADATA_BYTES // 1024} KiB")
    return result
