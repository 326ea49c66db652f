"""Plain-data wire format shared by the sandboxed harness processes (stdlib only).

Every value is encoded with its exact type, so ``1``, ``1.0``, ``True`` and ``(1,)``
stay distinct and anything that is not plain data (subclasses of ``int``/``str``,
objects with a custom ``__eq__``, sets, functions) cannot cross: ``encode`` raises
``WireError`` instead.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_NODES = 200_000
MAX_LINE = 8 << 20


class WireError(ValueError):
    """A value that is not plain data, or a malformed message."""


def encode(value: Any) -> Any:
    budget = [MAX_NODES]
    return _enc(value, budget, 0)


def _enc(value: Any, budget: list[int], depth: int) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > 100:
        raise WireError("value too large or too deep")
    kind = type(value)
    if value is None:
        return ["n"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", str(value)]
    if kind is float:
        return ["f", repr(value)]
    if kind is str:
        return ["s", value]
    if kind is list or kind is tuple:
        tag = "l" if kind is list else "t"
        return [tag, [_enc(v, budget, depth + 1) for v in value]]
    if kind is dict:
        pairs = [[_enc(k, budget, depth + 1), _enc(v, budget, depth + 1)] for k, v in value.items()]
        return ["d", pairs]
    raise WireError(f"{kind.__name__} is not plain data")


def decode(node: Any) -> Any:
    if type(node) is not list or not node or type(node[0]) is not str:
        raise WireError("malformed value")
    tag = node[0]
    if tag == "n" and len(node) == 1:
        return None
    if len(node) != 2:
        raise WireError("malformed value")
    payload = node[1]
    if tag == "b" and type(payload) is bool:
        return payload
    if tag == "i" and type(payload) is str:
        return int(payload)
    if tag == "f" and type(payload) is str:
        number = float(payload)
        if math.isnan(number) and payload not in ("nan", "-nan"):
            raise WireError("malformed float")
        return number
    if tag == "s" and type(payload) is str:
        return payload
    if tag in ("l", "t") and type(payload) is list:
        items = [decode(v) for v in payload]
        return items if tag == "l" else tuple(items)
    if tag == "d" and type(payload) is list:
        out = {}
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("malformed dict")
            out[decode(pair[0])] = decode(pair[1])
        return out
    raise WireError("malformed value")


def dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def loads(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE:
        raise WireError("message too long")
    message = json.loads(line)
    if type(message) is not dict:
        raise WireError("message is not an object")
    return message
