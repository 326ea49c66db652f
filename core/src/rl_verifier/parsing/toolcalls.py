"""Tool calls as models write them: the one parser used by training environments and verifiers.

Formats read:

- Hermes/Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks in text;
- OpenAI: a message's ``tool_calls`` (``{"id", "type": "function", "function": {"name",
  "arguments": "<JSON string>"}}``) and legacy ``function_call``;
- BFCL Python-call text: ``[f(a=1), m.g(b="x")]``, read as BFCL's prompt decoder reads it;
- BFCL JSON: ``[{"function": "f", "parameters": {...}}]``.

The arguments of a JSON call may sit under ``arguments``, ``parameters`` or ``args``, as an
object or as a JSON string holding one.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rl_verifier.parsing.python_source import parse_python

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
# Keys a JSON call's arguments may be written under, in order of preference.
ARGUMENT_KEYS = ("arguments", "parameters", "args")
UNTERMINATED = "unterminated <tool_call>: no closing </tool_call>"
NESTED_TOO_DEEPLY = "tool call JSON nested too deeply to read"
# Python-call text: the argument name ``f(**x)`` is recorded under (no parameter has it).
DOUBLE_STAR = "**"


@dataclass(frozen=True)
class ToolCall:
    """One call; ``error`` says why it could not be read (then it cannot be run or scored)."""

    name: str | None
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    call_id: str | None = None


class CallSyntaxError(ValueError):
    """Text that is not a list of calls in the expected syntax."""


# --------------------------------------------------------------------------------------------
# Hermes/Qwen <tool_call> blocks and OpenAI tool_calls


def _call_blocks(text: str) -> Iterator[tuple[int, int, int, int]]:
    """``(block start, body start, body end, block end)`` of each ``<tool_call>`` block, in
    one linear scan (a lazy regex is quadratic on many unclosed tags, and the model writes
    the text); the first unclosed tag ends the scan, as the regex would."""
    position = 0
    while (start := text.find(OPEN_TAG, position)) >= 0:
        body = start + len(OPEN_TAG)
        close = text.find(CLOSE_TAG, body)
        if close < 0:
            return
        position = close + len(CLOSE_TAG)
        yield start, body, close, position


def tagged_tool_calls(text: str) -> tuple[list[ToolCall], bool]:
    """The ``<tool_call>`` blocks of ``text`` and whether a ``<tool_call>`` is left unclosed."""
    calls: list[ToolCall] = []
    if OPEN_TAG not in text:
        return calls, False
    end = 0
    for _, body, close, block_end in _call_blocks(text):
        calls.append(tool_call_from_json(text[body:close]))
        end = block_end
    return calls, OPEN_TAG in text[end:]


def parse_tool_calls(text: str) -> list[ToolCall]:
    """The ``<tool_call>`` blocks of ``text``; an unclosed block comes last, with ``error`` set."""
    calls, unterminated = tagged_tool_calls(text)
    if unterminated:
        calls.append(ToolCall(None, {}, UNTERMINATED))
    return calls


def strip_tool_calls(text: str) -> str:
    """``text`` without its ``<tool_call>`` blocks (each becomes one space)."""
    if OPEN_TAG not in text:
        return text
    pieces: list[str] = []
    position = 0
    for start, _, _, end in _call_blocks(text):
        pieces += [text[position:start], " "]
        position = end
    return "".join(pieces) + text[position:]


def tool_call_from_json(body: str) -> ToolCall:
    """A call from the JSON body of a ``<tool_call>`` block."""
    try:
        obj = json.loads(body.strip())
    except json.JSONDecodeError as exc:
        return ToolCall(None, error=f"malformed tool call JSON: {exc.msg}")
    except RecursionError:
        return ToolCall(None, error=NESTED_TOO_DEEPLY)
    if not isinstance(obj, dict):
        return ToolCall(None, error="a tool call must be a JSON object with name and arguments")
    return tool_call_from_object(obj)


def tool_call_from_object(obj: Mapping[str, Any], call_id: str | None = None) -> ToolCall:
    """A call from ``{"name", "arguments"}`` (or ``parameters``/``args``) or OpenAI's
    ``{"id", "function": {...}}``; arguments may be a JSON string."""
    function = obj.get("function")
    if isinstance(function, dict):
        ident = obj.get("id")
        call_id = ident if isinstance(ident, str) else call_id
        obj = function
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(None, error="a tool call needs a non-empty string 'name'", call_id=call_id)
    raw: Any = {}
    for key in ARGUMENT_KEYS:
        if key in obj:
            raw = obj[key]
            break
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolCall(name, error=f"malformed arguments JSON: {exc.msg}", call_id=call_id)
        except RecursionError:
            return ToolCall(name, error=NESTED_TOO_DEEPLY, call_id=call_id)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return ToolCall(name, error="tool call arguments must be a JSON object", call_id=call_id)
    return ToolCall(name, raw, call_id=call_id)


def openai_tool_calls(items: Iterable[Any]) -> list[ToolCall]:
    """Calls from a message's ``tool_calls`` list (or ``[function_call]``)."""
    return [
        tool_call_from_object(item)
        if isinstance(item, dict)
        else ToolCall(None, error="a tool_calls entry must be an object")
        for item in items
    ]


def message_tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    """Every call of one chat message: ``<tool_call>`` blocks in its text content, then its
    ``tool_calls`` and legacy ``function_call`` (an unclosed block is an error call)."""
    content = message.get("content")
    calls = parse_tool_calls(content) if isinstance(content, str) else []
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        calls += openai_tool_calls(tool_calls)
    function_call = message.get("function_call")
    if isinstance(function_call, dict):
        calls += openai_tool_calls([function_call])
    return calls


# --------------------------------------------------------------------------------------------
# BFCL text formats


def bracketed(text: str) -> str:
    """BFCL's prompt-output cleanup: backticks, newlines and spaces trimmed from both ends,
    then ``[`` and ``]`` added where missing."""
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text += "]"
    return text


def parse_python_calls(text: str) -> list[ToolCall]:
    """Calls in Python syntax, ``[f(a=1), m.g(b="x")]``, read as BFCL's prompt decoder reads
    them (after :func:`bracketed`).

    Only keyword arguments are kept (positional ones are ignored); ``**x`` is kept under the
    name ``"**"``. A bare name is its text (``a=x`` gives ``"x"``), a call without keywords
    its source text, a call with keywords a nested ``{name: {arguments}}``, a subscript its
    source text, ``-c``/``+c``/``~c``/``not c`` on a constant ``-c``, and arithmetic on
    literals its value; tuples stay tuples. Anything else raises :class:`CallSyntaxError`.
    """
    source = bracketed(text)
    if "(" not in source and not _maybe_empty_list(source):
        # Without "(" no call can be written; only an empty list would parse as calls.
        raise CallSyntaxError("not Python call syntax: no call in the text")
    try:
        body = parse_python(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CallSyntaxError(f"not Python call syntax: {exc}") from None
    if isinstance(body, ast.Call):
        nodes: list[ast.expr] = [body]
    elif isinstance(body, ast.List):
        nodes = body.elts
    else:
        raise CallSyntaxError("not a list of calls")
    calls: list[ToolCall] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise CallSyntaxError("each element must be a function call")
        try:
            name, arguments = _python_call(node)
        except RecursionError:
            raise CallSyntaxError("values nested too deeply") from None
        calls.append(ToolCall(name, arguments))
    return calls


def _maybe_empty_list(source: str) -> bool:
    """Whether ``[...]`` text without a call could be an empty list: blank inside, or
    holding a comment or a line continuation (left to the parser)."""
    inside = source[1:-1]
    return not inside.strip() or "#" in inside or "\\" in inside


_JSON_CALLS_RE = re.compile(r"\[\s*{.*?}\s*(?:,\s*{.*?}\s*)*\]", re.DOTALL)


def parse_bfcl_json_calls(text: str) -> list[ToolCall]:
    """Calls in BFCL's JSON format, ``[{"function": "f", "parameters": {...}}]``, read as
    BFCL's JSON decoder reads them: text that is not JSON gives no call; list items that
    are not objects are skipped; an object without ``function`` or ``parameters`` raises."""
    source = bracketed(text)  # already from its first [ to its last ], as BFCL first cuts it
    calls_match = _JSON_CALLS_RE.search(source)
    if calls_match:
        source = calls_match.group(0)
    try:
        data = json.loads(source)
    except ValueError:
        return []
    if not isinstance(data, list | dict | str):
        raise CallSyntaxError("JSON calls must be a list of objects")
    calls: list[ToolCall] = []
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict):
            continue
        if "function" not in item or "parameters" not in item:
            raise CallSyntaxError("a JSON call needs 'function' and 'parameters'")
        name, arguments = item["function"], item["parameters"]
        if not isinstance(arguments, dict):
            calls.append(ToolCall(str(name), {}, "parameters must be a JSON object"))
        else:
            calls.append(ToolCall(str(name), arguments))
    return calls


def _python_call(node: ast.Call) -> tuple[str, dict[str, Any]]:
    parts: list[str] = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        arguments[keyword.arg or DOUBLE_STAR] = _python_value(keyword.value)
    return ".".join(reversed(parts)), arguments


def _python_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):
            raise CallSyntaxError("a unary operator applies only to a constant")
        return _apply(operator.neg, node.operand.value)
    if isinstance(node, ast.List):
        return [_python_value(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_python_value(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise CallSyntaxError("** in a dict literal is not supported")
        try:
            return {
                _python_value(key): _python_value(value)
                for key, value in zip(node.keys, node.values, strict=True)
                if key is not None
            }
        except TypeError as exc:
            raise CallSyntaxError(f"unusable dict key: {exc}") from None
    if isinstance(node, ast.BinOp):
        return _evaluate(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        name, arguments = _python_call(node)
        return {name: arguments}
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise CallSyntaxError(f"unsupported value: {type(node).__name__}")


# Arithmetic on literals, as Python evaluates it, with limits on the size of the result:
# the model writes the expression, so what it may cost is bounded before it is computed.
MAX_EXPONENT = 10_000
MAX_INT_BITS = 10_000  # about 3,000 decimal digits, within Python's int-to-text limit
MAX_ITEMS = 100_000
BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
}
UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}


def _evaluate(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return _apply(UNARY[type(node.op)], _evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        _check_size(node.op, left, right)
        return _apply(BINARY[type(node.op)], left, right)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_evaluate(item) for item in node.elts]
        kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
        return _apply(kind, items)
    if isinstance(node, ast.Dict):
        pairs = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise CallSyntaxError("cannot evaluate ** in a dict")
            pairs.append((_evaluate(key), _evaluate(value)))
        return _apply(dict, pairs)
    raise CallSyntaxError(f"cannot evaluate {type(node).__name__} in an expression")


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    numbers = all(isinstance(v, int | float | complex) for v in (left, right))
    if isinstance(op, ast.Pow | ast.LShift) and numbers and abs(right) > MAX_EXPONENT:
        raise CallSyntaxError("exponent or shift too large")
    if _int_result_bits(op, left, right) > MAX_INT_BITS:
        raise CallSyntaxError(f"the result would have more than {MAX_INT_BITS} bits")
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            if (
                isinstance(seq, str | bytes | list | tuple)
                and isinstance(count, int)
                and len(seq) * count > MAX_ITEMS
            ):
                raise CallSyntaxError("repeated sequence too long")


def _int_result_bits(op: ast.operator, left: Any, right: Any) -> int:
    """An upper bound on the bits of an integer result (0 when it cannot grow past its
    operands: sums, quotients, floats)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
        return 0
    if isinstance(op, ast.Mult):
        return int(left.bit_length() + right.bit_length())
    if isinstance(op, ast.LShift) and right > 0:
        return int(left.bit_length() + right)
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        return int(left.bit_length() * right)
    return 0


def _apply(function: Callable[..., Any], *values: Any) -> Any:
    try:
        return function(*values)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise CallSyntaxError(f"cannot evaluate: {exc}") from None
