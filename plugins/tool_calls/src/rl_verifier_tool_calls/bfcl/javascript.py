"""BFCL's reading of JavaScript argument values: each value is JavaScript source text,
converted to a Python value by the declared type before it is type-checked and compared.

Text a rule does not recognise stays a string (and then usually fails the type check).
"""

from __future__ import annotations

import re
from typing import Any

from rl_verifier_tool_calls.bfcl.java import python_number

# JavaScript type names BFCL declares, and the Python type a converted value must have.
JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}

INT_RE = re.compile(r"-?\d+$")
FLOAT_RE = re.compile(r"-?\d+(\.\d+)?$")
BIGINT_RE = re.compile(r"-?\d+n$")
ARRAY_2D_RE = re.compile(
    r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
)
ARRAY_RE = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
INNER_ARRAY_RE = re.compile(r"\[(.*?)\]")
OBJECT_RE = re.compile(r"\{(.*?)\}")
PAIR_RE = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


class JsTypeError(ValueError):
    """A declared type BFCL cannot convert (its checker stops on these)."""


def js_value(text: str, js_type: str, item_type: str | None = None) -> Any:
    """``text`` converted by ``js_type`` (``item_type``: the element type of an array)."""
    if js_type not in JS_TYPES:
        raise JsTypeError(f"BFCL cannot convert JavaScript type {js_type!r}")
    if js_type == "String":
        return _unquoted(text) if _quoted(text) else text
    if js_type == "integer":
        return int(text) if INT_RE.match(text) else text
    if js_type == "float":
        return float(text) if FLOAT_RE.match(text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if BIGINT_RE.match(text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "array":
        return _array(text.strip(), item_type)
    if js_type == "dict":
        return _object(text.strip())
    return text  # any


def _quoted(text: str) -> bool:
    return any(text.startswith(q) and text.endswith(q) for q in "\"'")


def _unquoted(text: str) -> str:
    return text[1:-1]


def _array(code: str, item_type: str | None) -> Any:
    try:
        grid = ARRAY_2D_RE.match(code)
        if grid:
            rows = []
            for index, row in enumerate(INNER_ARRAY_RE.findall(grid.group(0))):
                row = row.strip()
                if index == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([untyped_value(item.strip()) for item in row.split(",")])
            return rows
        flat = ARRAY_RE.match(code)
        if not flat:
            return code
        inside = flat.group(1) if flat.group(1) is not None else flat.group(2)
        inside = (inside or "").strip()
        items = inside.split(",") if inside else []
        if not item_type:
            return [untyped_value(item.strip()) for item in items]
        return [_typed_item(item.strip(), item_type) for item in items]
    except (ValueError, TypeError, IndexError):
        return code


def _typed_item(item: str, item_type: str) -> Any:
    # A quoted item is converted with "String" as its own element type, as BFCL does.
    if item.startswith(("'", '"')):
        return js_value(item, item_type, "String")
    return js_value(item, item_type)


def _object(code: str) -> Any:
    if code == "{}":
        return {}
    found = OBJECT_RE.match(code)
    if not found:
        return code
    result: dict[str, Any] = {}
    for key, value in PAIR_RE.findall(found.group(1)):
        key = key.strip().strip("'\"")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            result[key] = _array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            result[key] = _object(value)
        else:
            result[key] = untyped_value(value.strip("'\""))
    return result


def untyped_value(text: str) -> Any:
    """A JavaScript literal without a declared type: boolean, quoted string, then whatever
    Python's int() or float() accepts, else the text itself."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text):
        return _unquoted(text)
    return python_number(text)
