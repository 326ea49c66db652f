"""Declared tools and the legality of a call: a known name and schema-valid arguments."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from rl_verifier import ToolCall

# BFCL and some function-calling datasets write Python type names in their schemas.
TYPE_ALIASES = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "list": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
}


class ToolSpecError(ValueError):
    """A tool declaration that cannot be used."""


def declared_tools(specs: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Name to parameters schema, from OpenAI ``{"type": "function", "function": {...}}``
    entries or plain ``{"name", "parameters"}`` ones."""
    tools: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ToolSpecError(f"a tool declaration must be an object, got {type(spec).__name__}")
        body = spec.get("function", spec)
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            raise ToolSpecError("a tool declaration needs a string 'name'")
        params = body.get("parameters", {"type": "object"})
        if not isinstance(params, Mapping):
            raise ToolSpecError(f"tool {body['name']!r}: 'parameters' must be a JSON Schema object")
        tools[body["name"]] = json_schema(dict(params))
    return tools


def json_schema(schema: Any) -> Any:
    """``schema`` with Python type names (dict, float, tuple, any) mapped to JSON Schema."""
    if isinstance(schema, list):
        return [json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out[key] = TYPE_ALIASES.get(value, value)
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: json_schema(sub) for name, sub in value.items()}
        else:
            out[key] = json_schema(value)
    return out


def tool_validators(specs: list[Any]) -> Mapping[str, Any]:
    """Name to a compiled JSON Schema validator of its arguments, cached per declaration."""
    try:
        key = json.dumps(specs, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ToolSpecError(f"tool declarations must be JSON: {exc}") from None
    return _compiled(key)


@lru_cache(maxsize=256)
def _compiled(specs_json: str) -> Mapping[str, Any]:
    tools = declared_tools(json.loads(specs_json))
    return MappingProxyType({name: _validator(name, schema) for name, schema in tools.items()})


def _validator(name: str, schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolSpecError(f"tool {name!r}: invalid JSON Schema: {exc.message}") from None
    return cls(schema)


def illegal_reason(call: ToolCall, validators: Mapping[str, Any]) -> str | None:
    """Why ``call`` is illegal, or None when it is legal."""
    if call.error is not None:
        return call.error
    if call.name is None or call.name not in validators:
        known = ", ".join(sorted(validators)) or "none declared"
        return f"unknown tool {call.name!r} (tools: {known})"
    error: Any = jsonschema.exceptions.best_match(validators[call.name].iter_errors(call.arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{call.name}: arguments{'/' + where if where else ''}: {error.message!s}"
