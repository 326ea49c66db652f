"""Python call text in its common shape, read without building a syntax tree.

``[f(a=1, b="x"), m.g(c=[1, 2.5], d={"k": (True, None)})]``: calls of dotted names with
keyword arguments whose values are plain literals (strings without backslashes, decimal
numbers, ``True``/``False``/``None``, ``...``, lists, tuples, dicts), bare names, simple
subscripts (``data['k'][0]``) and calls nested in them. ast's reader gives a subscript, and
a nested call without keyword arguments, as its source text as ``ast.unparse`` writes it:
read here only where that text is plain (indexes and arguments are names, decimal integers
or, for indexes, strings of letters, digits, ``_`` and spaces). A repeated keyword argument
is not a syntax error to ``ast.parse`` (the compiler rejects it): the last value counts.

:func:`read_python_calls` gives exactly what ``parse_python_calls`` (the ``ast`` reader in
core) gives for such text, and None for any other text, which the caller then hands to
``parse_python_calls``: that reader stays the one that decides what else is accepted and
every error message. Only what is fully understood here is read here.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

# Whitespace Python allows between the tokens inside brackets (others are left to ast).
_SPACE = r"[ \t\n]*"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# String bodies: no line ends, NUL or surrogates (UTF-8 cannot hold them); the escapes of
# ESCAPES only (others, octal and \\x ones among them, are left to ast).
_BODY = "(?:[^{quote}\\\\\n\r\x00\ud800-\udfff]|\\\\[ntr\\\\'\"])*"
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}
ESCAPE = re.compile(r"\\(.)")
_SCALAR = (
    _SPACE
    + "(?:"
    + f"'({_BODY.format(quote=chr(39))})'"  # 1: single-quoted string
    + f'|"({_BODY.format(quote=chr(34))})"'  # 2: double-quoted string
    + r"|(-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|-?[0-9]+[eE][+-]?[0-9]+)"  # 3: float
    + r"|(-?(?:0+|[1-9][0-9]{0,999}))"  # 4: int (longer ones are left to ast)
    + f"|({_NAME})"  # 5: a bare name, True, False or None
    + r"|(\.\.\.)"  # 6: Ellipsis
    + ")"
    + _SPACE
)
SCALAR = re.compile(_SCALAR + r"(?=[,)\]}:])")
# The usual argument in one match: name = scalar, then the , or ) after it (group 8).
KEYWORD_SCALAR = re.compile(_SPACE + f"({_NAME}){_SPACE}=(?!=)" + _SCALAR + "([,)])")
OPENER = re.compile(_SPACE + rf"(?:([\[{{(])|({_NAME}(?:\.{_NAME})*)\()")
KEYWORD = re.compile(_SPACE + rf"({_NAME}){_SPACE}=(?!=)")
SPLAT = re.compile(_SPACE + r"\*\*")
DOUBLE_STAR = "**"  # the argument name ast's reader gives ``f(**x)``
DELIMITER = re.compile(_SPACE + r"([,)\]}:])")
CALL = re.compile(_SPACE + rf"({_NAME}(?:\.{_NAME})*)\(")
# A subscript whose text ast.unparse writes back as it is: name[index][index]..., the indexes
# decimal integers or quoted strings of letters, digits, _ and spaces.
_PLAIN_STRING = r"'([A-Za-z0-9_ ]*)'|\"([A-Za-z0-9_ ]*)\""
_INTEGER = r"0|[1-9][0-9]{0,999}"
SUBSCRIPT = re.compile(
    _SPACE
    + rf"({_NAME}(?:\.{_NAME})*)((?:\[(?:{_PLAIN_STRING}|{_INTEGER})\])+)"
    + _SPACE
    + r"(?=[,)\]}:])"
)
INDEX = re.compile(rf"\[(?:{_PLAIN_STRING}|({_INTEGER}))\]")
# A positional argument whose text ast.unparse writes back as it is.
PLAIN_ARGUMENT = re.compile(rf"{_INTEGER}|{_NAME}|\.\.\.")
CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
# Names Python does not take as a name (``__debug__`` cannot be a keyword argument).
RESERVED = frozenset(keyword.kwlist) - set(CONSTANTS) | {"__debug__"}
MAX_DEPTH = 50  # deeper text is left to ast, which has its own bounds
CLOSING = {"[": "]", "(": ")", "{": "}"}

Call = tuple[str, dict[str, Any]]


class _Outside(Exception):
    """The text is not in the shape read here."""


def read_python_calls(source: str) -> list[Call] | None:
    """The calls of ``source`` (text as ``bracketed`` leaves it: ``[...]``) as
    ``(name, {argument: value})``; None when the text is outside the common shape."""
    try:
        calls, end = _call_list(source)
    except _Outside:
        return None
    return calls if end == len(source) else None


def _call_list(source: str) -> tuple[list[Call], int]:
    if source[:1] != "[":
        raise _Outside
    calls: list[Call] = []
    position = 1
    found = DELIMITER.match(source, position)
    if found is not None and found.group(1) == "]":
        return calls, found.end()
    while True:
        head = CALL.match(source, position)
        if head is None:
            raise _Outside
        arguments, position, _ = _arguments(source, head.end(), 0)
        calls.append((_dotted(head.group(1)), arguments))
        found = DELIMITER.match(source, position)
        if found is None:
            raise _Outside
        mark = found.group(1)
        position = found.end()
        if mark == "]":
            return calls, position
        if mark != ",":
            raise _Outside
        after = DELIMITER.match(source, position)
        if after is not None and after.group(1) == "]":
            return calls, after.end()


def _dotted(name: str) -> str:
    if "." in name:
        if any(part in RESERVED or part in CONSTANTS for part in name.split(".")):
            raise _Outside
    elif name in RESERVED or name in CONSTANTS:
        raise _Outside
    return name


def _arguments(source: str, position: int, depth: int) -> tuple[dict[str, Any], int, list[str]]:
    """Keyword arguments after a call's ``(``, up to and past its ``)``, and the text of
    the positional ones before them (read, then left out)."""
    arguments: dict[str, Any] = {}
    positional: list[str] = []
    while True:  # at the start, or after a comma
        usual = KEYWORD_SCALAR.match(source, position)
        if usual is not None:
            name, single, double, floating, integer, bare, _, mark = usual.groups()
            if name in RESERVED or name in CONSTANTS:
                raise _Outside
            if single is not None or double is not None:
                text = double if single is None else single
                value = ESCAPE.sub(_unescape, text) if "\\" in text else text
            elif integer is not None:
                value = int(integer)
            elif floating is not None:
                value = float(floating)
            elif bare is not None:
                value = _bare(bare)
            else:
                value = "..."
            arguments[name] = value
            position = usual.end()
            if mark == ")":
                return arguments, position, positional
            continue
        found = DELIMITER.match(source, position)
        if found is not None and found.group(1) == ")":
            return arguments, found.end(), positional  # f() or a trailing comma
        named = KEYWORD.match(source, position)
        splat = None if named is not None else SPLAT.match(source, position)
        if named is not None:
            name = named.group(1)
            if name in RESERVED or name in CONSTANTS:
                raise _Outside
            arguments[name], position = _value(source, named.end(), depth)
        elif splat is not None:
            if DOUBLE_STAR in arguments:
                raise _Outside
            arguments[DOUBLE_STAR], position = _value(source, splat.end(), depth)
        elif arguments:
            raise _Outside  # a positional argument after a keyword one is a syntax error
        else:
            start = position
            _, position = _value(source, position, depth)
            positional.append(source[start:position].strip(" \t\n"))
        found = DELIMITER.match(source, position)
        if found is None:
            raise _Outside
        mark = found.group(1)
        position = found.end()
        if mark == ")":
            return arguments, position, positional
        if mark != ",":
            raise _Outside


def _bare(name: str) -> Any:
    """A bare name's value: True, False, None, or its text."""
    if name in CONSTANTS:
        return CONSTANTS[name]
    if name in RESERVED:
        raise _Outside
    return name


def _unescape(escape: re.Match[str]) -> str:
    return ESCAPES[escape.group(1)]


def _value(source: str, position: int, depth: int) -> tuple[Any, int]:
    scalar = SCALAR.match(source, position)
    if scalar is not None:
        kind = scalar.lastindex
        text = scalar.group(kind)  # type: ignore[arg-type]
        end = scalar.end()
        if kind == 1 or kind == 2:
            return (ESCAPE.sub(_unescape, text) if "\\" in text else text), end
        if kind == 4:
            return int(text), end
        if kind == 3:
            return float(text), end
        if kind == 5:
            return _bare(text), end
        return "...", end
    if depth >= MAX_DEPTH:
        raise _Outside
    subscript = SUBSCRIPT.match(source, position)
    if subscript is not None:
        indexes = [  # an index is an integer, or a string (its quotes as unparse writes them)
            f"[{integer}]" if integer else f"['{single or double}']"
            for single, double, integer in INDEX.findall(subscript.group(2))
        ]
        return _dotted(subscript.group(1)) + "".join(indexes), subscript.end()
    opened = OPENER.match(source, position)
    if opened is None:
        raise _Outside
    bracket = opened.group(1)
    if bracket is None:  # a nested call: {name: arguments}, or its text without arguments
        name = _dotted(opened.group(2))
        arguments, end, positional = _arguments(source, opened.end(), depth + 1)
        if arguments:
            return {name: arguments}, end
        if not all(PLAIN_ARGUMENT.fullmatch(text) for text in positional):
            raise _Outside  # ast's reader gives the call's text as ast.unparse writes it
        return f"{name}({', '.join(positional)})", end
    if bracket == "{":
        return _dict(source, opened.end(), depth + 1)
    items, end, comma = _items(source, opened.end(), CLOSING[bracket], depth + 1)
    if bracket == "[":
        return items, end
    if comma or not items:
        return tuple(items), end
    return items[0], end  # (x) is x


def _items(source: str, position: int, close: str, depth: int) -> tuple[list[Any], int, bool]:
    """Values separated by commas up to and past ``close``; whether a comma was seen."""
    items: list[Any] = []
    comma = False
    while True:
        found = DELIMITER.match(source, position)
        if found is not None and found.group(1) == close:
            return items, found.end(), comma
        value, position = _value(source, position, depth)
        items.append(value)
        found = DELIMITER.match(source, position)
        if found is None:
            raise _Outside
        mark = found.group(1)
        position = found.end()
        if mark == close:
            return items, position, comma
        if mark != ",":
            raise _Outside
        comma = True


def _dict(source: str, position: int, depth: int) -> tuple[dict[Any, Any], int]:
    pairs: dict[Any, Any] = {}
    while True:
        found = DELIMITER.match(source, position)
        if found is not None and found.group(1) == "}":
            return pairs, found.end()
        key, position = _value(source, position, depth)
        found = DELIMITER.match(source, position)
        if found is None or found.group(1) != ":":
            raise _Outside  # a set, or not a dict at all
        value, position = _value(source, found.end(), depth)
        try:
            pairs[key] = value
        except TypeError:  # an unhashable key: ast's reader says so
            raise _Outside from None
        found = DELIMITER.match(source, position)
        if found is None:
            raise _Outside
        mark = found.group(1)
        position = found.end()
        if mark == "}":
            return pairs, position
        if mark != ",":
            raise _Outside
