"""Model output as a list of function calls: Python-call syntax or JSON."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

FENCE_RE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)

ParsedCall = tuple[str, dict[str, Any]]


class OutputParseError(ValueError):
    """The output is not a list of function calls."""


def parse_output(text: str) -> list[ParsedCall]:
    """Calls in ``[f(a=1), g(b="x")]`` syntax, or JSON: ``[{"f": {"a": 1}}]`` (BFCL's own form)
    or ``[{"name": "f", "arguments": {"a": 1}}]``. A single call may stand without brackets."""
    text = text.strip()
    fenced = FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise OutputParseError("empty output")
    if text[0] in "[{":
        try:
            data = json.loads(text)
        except ValueError:
            pass  # not JSON; may still be Python ([f(a=1)])
        else:
            return _from_json(data)
    return _from_python(text)


def _from_json(data: Any) -> list[ParsedCall]:
    items = data if isinstance(data, list) else [data]
    calls: list[ParsedCall] = []
    for item in items:
        if not isinstance(item, dict):
            raise OutputParseError("each JSON call must be an object")
        if isinstance(item.get("function"), dict):
            item = item["function"]
        if isinstance(item.get("name"), str):
            keys = ("arguments", "args", "parameters")
            args: Any = next((item[k] for k in keys if k in item), {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except ValueError:
                    raise OutputParseError("arguments are not valid JSON") from None
            name = item["name"]
        elif len(item) == 1:
            name, args = next(iter(item.items()))
        else:
            raise OutputParseError("a JSON call needs 'name' and 'arguments', or {name: args}")
        if not isinstance(args, dict):
            raise OutputParseError(f"arguments of {name!r} must be an object")
        calls.append((str(name), dict(args)))
    return calls


def _from_python(text: str) -> list[ParsedCall]:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise OutputParseError(f"not Python call syntax: {exc.msg}") from None
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    return [_call(node) for node in nodes]


def _call(node: ast.expr) -> ParsedCall:
    if not isinstance(node, ast.Call):
        raise OutputParseError("each element must be a function call")
    if node.args:
        raise OutputParseError("positional arguments are not allowed; name every argument")
    args: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise OutputParseError("**kwargs is not allowed")
        try:
            args[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise OutputParseError(f"argument {keyword.arg!r} is not a literal") from None
    return _dotted(node.func), args


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise OutputParseError("a call must name a function")
