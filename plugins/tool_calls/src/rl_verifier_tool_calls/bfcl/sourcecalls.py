"""Java and JavaScript call text, read as BFCL's prompt decoder reads it.

BFCL parses ``[f(a=1, b="x")]`` (the brackets removed) with tree-sitter and the grammar
versions it pins; the same parsers are used here (extra ``bfcl-java``), so that what is a
syntax error and how a value's text is extracted agree with BFCL. Only the first call is
read; each argument value is a string (Java or JavaScript source) that the type rules
convert later. ``name=value`` arguments are kept; in Java a bare name or class literal is
kept under the key ``None`` (no parameter has it), in JavaScript a bare name or ``true``.
Like BFCL, Java node text is cut from the text by byte offsets (so text after a non-ASCII
character comes out shifted).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from rl_verifier.internal import CallSyntaxError, bracketed

EXTRA = "rl-verifier-tool-calls[bfcl-java]"
MAX_TREE_DEPTH = 400  # syntax-tree levels; ordinary calls are under 30, Python's limit is 1000


class DecoderMissing(RuntimeError):
    """tree-sitter (the ``bfcl-java`` extra) is not installed."""


@cache
def _parser(language: str) -> Any:
    try:
        import tree_sitter
        import tree_sitter_java
        import tree_sitter_javascript
    except ImportError:
        raise DecoderMissing(
            f"reading {language} call text needs tree-sitter: pip install '{EXTRA}'"
        ) from None
    grammar = tree_sitter_java if language == "java" else tree_sitter_javascript
    parser = tree_sitter.Parser()
    parser.set_language(tree_sitter.Language(grammar.language(), language))
    return parser


def _parse(text: str, language: str) -> tuple[Any, str]:
    """The syntax tree of ``text`` as BFCL builds it (bracketed, then without the brackets)
    and the text it was parsed from."""
    source = bracketed(text)[1:-1]
    root = _parser(language).parse(source.encode("utf8")).root_node
    if _deeper_than(root, MAX_TREE_DEPTH):
        # tree-sitter's sexp() and the readers below recurse: a model's `1+1+...+1` a
        # hundred thousand terms long would overflow the C stack. BFCL would crash here.
        raise CallSyntaxError(f"{language} call text nested deeper than {MAX_TREE_DEPTH}")
    if "ERROR" in root.sexp():
        raise CallSyntaxError(f"not {language} call syntax")
    return root, source


def _deeper_than(root: Any, limit: int) -> bool:
    """Whether the tree under ``root`` is more than ``limit`` levels deep (walked with a
    cursor, without recursion)."""
    cursor, depth = root.walk(), 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            if depth > limit:
                return True
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return False
            depth -= 1


def _text(node: Any, source: str) -> str:
    """Java: the node's text cut from the str by its byte offsets, as BFCL does."""
    return source[node.start_byte : node.end_byte]


def _js_text(node: Any) -> str:
    return bytes(node.text).decode("utf8")


def _named(arguments: dict[Any, Any], name: Any, value: Any) -> None:
    if name in arguments:
        raise CallSyntaxError(f"argument {name!r} is given twice")
    arguments[name] = value


# --------------------------------------------------------------------------------------------
# Java


def java_calls(text: str) -> list[tuple[str, dict[Any, Any]]] | None:
    """The first Java method call in ``text`` as ``[(name, {param: source text})]``; None
    when there is no call (BFCL then has output in the wrong format)."""
    root, source = _parse(text, "java")
    invocation = next((n for n in _preorder(root) if n.type == "method_invocation"), None)
    if invocation is None or invocation.child_by_field_name("arguments") is None:
        return None
    name = _text(invocation.child_by_field_name("name"), source)
    owner = invocation.child_by_field_name("object")
    if owner is not None:
        name = f"{_text(owner, source)}.{name}"
    arguments: dict[Any, Any] = {}
    for child in invocation.child_by_field_name("arguments").children:
        if child.type == "assignment_expression":
            left, right = child.children[0], child.children[2]
            _named(arguments, _text(left, source), _java_text(right, source, nested=False))
        elif child.type in ("identifier", "class_literal", "set"):
            _named(arguments, None, _java_text(child, source, nested=False))
    return [(name, arguments)]


def _preorder(node: Any) -> Iterator[Any]:
    yield node
    for child in node.children:
        yield from _preorder(child)


RAW_JAVA = frozenset({"identifier", "class_literal", "type_identifier", "method_invocation"})


def _java_text(node: Any, source: str, nested: bool = True) -> str:
    """A value's text: literals unquoted at the top level; names and method calls verbatim;
    ``new T[]{...}`` and ``new T(args)`` rebuilt (an anonymous class body is dropped); any
    other node its tokens joined without whitespace."""
    if node is None:
        raise CallSyntaxError("incomplete Java expression")
    kind = node.type
    if kind in ("string_literal", "character_literal"):
        return _text(node, source) if nested else _text(node, source)[1:-1]
    if kind in RAW_JAVA:
        return _text(node, source)
    if kind == "array_creation_expression":
        element = _java_text(node.child_by_field_name("type"), source)
        values = _java_text(node.child_by_field_name("value"), source)
        return f"new {element}[]{values}"
    if kind == "object_creation_expression":
        created = _java_text(node.child_by_field_name("type"), source)
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return f"new {created}()"
        parts = [
            _java_text(child, source)
            for child in arguments.children
            if child.type not in (",", "(", ")")
        ]
        return f"new {created}({', '.join(parts)})"
    if kind == "set":
        parts = [_java_text(n, source) for n in node.children if n.type not in (",", "set")]
        return "{" + ", ".join(parts) + "}"
    if node.child_count > 0:
        return "".join(_java_text(child, source) for child in node.children)
    return _text(node, source)


# --------------------------------------------------------------------------------------------
# JavaScript


def javascript_calls(text: str) -> list[tuple[str, dict[Any, Any]]] | None:
    """The first top-level JavaScript call in ``text`` as ``[(name, {param: source text})]``
    (one pair of surrounding quotes removed); None when there is none."""
    root, _ = _parse(text, "javascript")
    for statement in root.children:
        if statement.type != "expression_statement":
            continue
        for call in statement.children:
            if call.type == "call_expression":
                return [(_js_text(call.children[0]), _js_arguments(call.children[1]))]
    return None


def _js_arguments(node: Any) -> dict[Any, Any]:
    arguments: dict[Any, Any] = {}
    for child in node.children:
        if child.type == "assignment_expression":
            value = _js_text(child.children[2])
            if value[:1] in ("'", '"') and value.endswith(value[0]):
                value = value[1:-1]
            _named(arguments, _js_text(child.children[0]), value)
        elif child.type in ("identifier", "true"):
            _named(arguments, None, _js_text(child))
    return arguments
