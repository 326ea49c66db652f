"""BFCL's reading of Java argument values: each value is Java source text, converted to a
Python value by the declared Java type before it is type-checked and compared.

Text a rule does not recognise stays a string (and then usually fails the type check).
"""

from __future__ import annotations

import re
from typing import Any

# Java type names BFCL declares, and the Python type a converted value must have.
JAVA_TYPES: dict[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
UNCONVERTED = frozenset({"Set", "Hashtable", "Queue", "Stack"})

# ``$`` as in Python's re.match: the end, or just before a final newline.
INT_RE = re.compile(r"-?\d+$")
DOUBLE_RE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?$")
FLOAT_RE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
LONG_RE = re.compile(r"-?\d+[lL]$")
FLOAT_SUFFIX_RE = re.compile(r"[fF]$")
LONG_SUFFIX_RE = re.compile(r"[lL]$")

AS_LIST_RE = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
ADDS_RE = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
ADD_RE = re.compile(r"add\((.+?)\)")
EMPTY_LIST_RE = re.compile(r"new\s+ArrayList<\w*>\(\)")
ARRAY_RE = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
HASHMAP_RE = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
PUT_RE = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
EMPTY_MAP_RE = re.compile(r"new\s+HashMap<.*?>\s*\(\)")


class JavaTypeError(ValueError):
    """A declared type BFCL cannot convert (its checker stops on these)."""


def java_value(text: str, java_type: str, item_type: str | None = None) -> Any:
    """``text`` converted by ``java_type`` (``item_type``: the element type of a list)."""
    if java_type not in JAVA_TYPES or java_type in UNCONVERTED:
        raise JavaTypeError(f"BFCL cannot convert Java type {java_type!r}")
    if java_type in ("byte", "short", "integer"):
        return int(text) if INT_RE.match(text) else text
    if java_type == "float":
        return float(FLOAT_SUFFIX_RE.sub("", text)) if FLOAT_RE.match(text) else text
    if java_type == "double":
        return float(text) if DOUBLE_RE.match(text) else text
    if java_type == "long":
        return int(LONG_SUFFIX_RE.sub("", text)) if LONG_RE.match(text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type == "ArrayList":
        return _array_list(text, item_type)
    if java_type == "Array":
        return _array(text, item_type)
    if java_type == "HashMap":
        return _hash_map(text)
    return text  # String, any, and char (BFCL's char pattern never matches)


def _array_list(text: str, item_type: str | None) -> Any:
    as_list = AS_LIST_RE.search(text)
    if as_list:
        return [_list_item(part.strip(), item_type) for part in as_list.group(1).split(",")]
    adds = ADDS_RE.search(text)
    if adds:
        return [_list_item(found.strip(), item_type) for found in ADD_RE.findall(adds.group(1))]
    return [] if EMPTY_LIST_RE.search(text) else text


def _list_item(text: str, item_type: str | None) -> Any:
    if item_type in ("char", "String"):
        return text[1:-1]
    return java_value(text, item_type) if item_type else untyped_value(text)


def _array(text: str, item_type: str | None) -> Any:
    found = ARRAY_RE.search(text)
    if not found:
        return text
    parts = [part.strip() for part in found.group(1).split(",") if part.strip()]
    if item_type:
        return [java_value(part, item_type) for part in parts]
    return [untyped_value(part) for part in parts]


def _hash_map(text: str) -> Any:
    found = HASHMAP_RE.search(text)
    if found:
        body = found.group(1)
        if not body.strip():
            return {}
        return {key: untyped_value(value.strip()) for key, value in PUT_RE.findall(body)}
    return {} if EMPTY_MAP_RE.search(text) else text


def untyped_value(text: str) -> Any:
    """A Java literal without a declared type: boolean, quoted string, long, float, then
    whatever Python's int() or float() accepts, else the text itself."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if LONG_RE.match(text):
        return int(text[:-1])
    if FLOAT_RE.match(text):
        return float(FLOAT_SUFFIX_RE.sub("", text))
    return python_number(text)


def python_number(text: str) -> Any:
    """``int(text)``, else ``float(text)``, else ``text``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
