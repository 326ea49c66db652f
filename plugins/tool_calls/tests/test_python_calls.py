"""The tree-free reader of Python call text gives what the ast reader gives, or steps aside.

BFCL mode reads prompt models' calls with ``read_python_calls`` first and with core's
``parse_python_calls`` (ast) for any text the former leaves (None). Whatever it reads must be
exactly what ast reads (values and their types); on generated and mutated texts the decoded
calls and the errors are those of the ast reader alone.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from rl_verifier.internal import CallSyntaxError, bracketed, parse_python_calls
from rl_verifier_tool_calls.bfcl.decode import DecodeFailure, prompt_calls
from rl_verifier_tool_calls.bfcl.python_calls import read_python_calls


def ast_calls(text: str) -> list[tuple[str | None, dict[str, Any]]] | str:
    """The ast reader's calls, or its error message."""
    try:
        return [(c.name, c.arguments) for c in parse_python_calls(text)]
    except CallSyntaxError as exc:
        return f"error: {exc}"


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == 1.0 == True`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        pairs = zip(a.items(), b.items(), strict=False)
        return len(a) == len(b) and all(same(k, j) and same(v, w) for (k, v), (j, w) in pairs)
    if isinstance(a, float):
        return repr(a) == repr(b) or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


NESTED = {"k": (True, None)}


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("[f(a=1, b='x')]", [("f", {"a": 1, "b": "x"})]),
        ('m.g(c=[1, 2.5, -3], d={"k": (True, None)})', [("m.g", {"c": [1, 2.5, -3], "d": NESTED})]),
        (
            "[f(a=x), g(b=h(c=1), e=k())]",
            [("f", {"a": "x"}), ("g", {"b": {"h": {"c": 1}}, "e": "k()"})],
        ),
        ("[f(t=(1,), u=(2), v=())]", [("f", {"t": (1,), "u": 2, "v": ()})]),
        ("[f(1, 'x', a='it\\'s\\n\\\\', b=...,),]", [("f", {"a": "it's\n\\", "b": "..."})]),
        (
            "[f(**{'k': 1}, a=2), g(b=1, **x)]",
            [("f", {"**": {"k": 1}, "a": 2}), ("g", {"b": 1, "**": "x"})],
        ),
        ("[]", []),
        ("[f()]", [("f", {})]),
        ("[f(a={1: 'x', True: 'y', 1.0: 'z'})]", [("f", {"a": {1: "z"}})]),
        (
            "[f(a=1e3, b=.5, c=5., d=-0.0, e=007.5)]",
            [("f", {"a": 1e3, "b": 0.5, "c": 5.0, "d": -0.0, "e": 7.5})],
        ),
        ("[f(a=00, b=-0, c=True, d=None)]", [("f", {"a": 0, "b": 0, "c": True, "d": None})]),
        ("[f(a='Zürich, 東京 😀')]", [("f", {"a": "Zürich, 東京 😀"})]),
        # ast.parse takes a repeated keyword (the compiler would not): the last value counts
        ("[f(a=1, b=2, a=3)]", [("f", {"a": 3, "b": 2})]),
        # a subscript, or a call without keywords, as ast.unparse writes its text
        (
            "[f(a=x[0], b=data[\"k\"][0], c=d['a b'][''])]",
            [("f", {"a": "x[0]", "b": "data['k'][0]", "c": "d['a b']['']"})],
        ),
        (
            "[f(a=g(1,2 ,x), b=m.h(), c=k(True, ...))]",
            [("f", {"a": "g(1, 2, x)", "b": "m.h()", "c": "k(True, ...)"})],
        ),
    ],
)
def test_reads_the_common_shape_as_ast_does(text: str, calls: list[Any]) -> None:
    read = read_python_calls(bracketed(text))
    assert read is not None and same(read, calls)
    assert same(ast_calls(text), calls)


@pytest.mark.parametrize(
    "text",
    [
        "[f(a=1, 2)]",  # positional after keyword: a syntax error
        "[f(if=1)]",
        "[class(a=1)]",
        "[f(__debug__=1)]",
        "[f(a=None.x)]",
        "[f(a={[1]: 2})]",  # unhashable key
        "[f(a={1, 2})]",  # a set
        "[f(a=g(-1))]",  # ast gives the call's text as ast.unparse writes it
        "[f(a=g(01))]",
        "[f(a=g('x'))]",
        "[f(a=g(x[0]))]",
        "[f(a=1 + 2)]",
        "[f(a=x[ 0 ])]",
        "[f(a=x[-1])]",
        "[f(a=x[0:1])]",
        "[f(a=x['it s\\n'])]",
        "[f(a=True[0])]",
        "[f(a=x[0](1))]",
        "[f(a=m.pi)]",
        "[f(a='\\x41')]",
        "[f(a=b'x')]",
        "[f(a=f'x')]",
        "[f(a=1_000)]",
        "[f(a=0x1f)]",
        "[f(a=1j)]",
        "[f(a=--1)]",
        "[f(**k, 1)]",
        "[f(**k, **j)]",
        "[f(a=1)] + [g()]",
        "[(f(a=1))]",
        "[f(a=1)(b=2)]",
        "[f(a='x' 'y')]",
        "[f(a='\ud800')]",
        "[f(a='x\x00')]",
        "[f(a=1)\r]",
        "[f(a=" + "9" * 5000 + ")]",
        "[f(a=" + "[" * 60 + "]" * 60 + ")]",
    ],
)
def test_leaves_other_text_to_ast(text: str) -> None:
    assert read_python_calls(bracketed(text)) is None


# --------------------------------------------------------------------------------------------
# Generated texts: calls in the common shape, then mutated character by character


PLAIN = "aZ_ 09.,()[]{}:=-+*#\téü東😀"
CHARACTERS = PLAIN + "'\"\\nt\n\r\x00\ud800"
TOKENS = ["(", ")", "[", "]", "{", "}", ",", ":", "=", "'", '"', " ", "\\", "-", ".", "e", "1",
          "0", "_", "j", "None", "True", "if", "lambda", "**", "\n", "\t", "x"]  # fmt: skip


def random_string(rng: random.Random) -> str:
    alphabet = PLAIN if rng.random() < 0.7 else CHARACTERS
    body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
    quote = rng.choice("'\"")
    escaped = body.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return quote + rng.choice([body, escaped, escaped]) + quote


def random_number(rng: random.Random) -> str:
    digits = str(rng.randint(0, 10 ** rng.randint(1, 40)))
    if rng.random() < 0.7:
        return rng.choice([digits, "-" + digits, str(rng.uniform(-1e6, 1e6))])
    return rng.choice([
        digits, "-" + digits, digits + "." + str(rng.randint(0, 99)), "." + digits,
        digits + "e" + str(rng.randint(-400, 400)), "0" + digits, digits + ".",
        str(rng.uniform(-1e6, 1e6)), "00", "-0", "1_0",
    ])  # fmt: skip


def random_value(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randint(0, 12 if depth < 4 else 3)
    if kind == 4 and rng.random() < 0.9:
        kind = 0
    if kind <= 1:
        return random_string(rng)
    if kind == 2:
        return random_number(rng)
    if kind == 3:
        return rng.choice(["True", "False", "None", "...", "x", "data", "match", "Ellipsis"])
    if kind == 4:
        return rng.choice([
            "1 + 2", "x[0]", "m.pi", "-True", "not 1", "+1", "(1)", "g(1)", "data['k'][0]",
            'd["a b"]', "x[ 0 ]", "g(1, x)", "g(...)", "g(-1)", "g(x=1)", "m.g(True, 0)",
        ])  # fmt: skip
    items = [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    trailing = "," if items and rng.random() < 0.2 else ""
    if kind <= 6:
        return "[" + ", ".join(items) + trailing + "]"
    if kind <= 8:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else trailing) + ")"
    if kind <= 10:
        keys = [random_value(rng, 4) for _ in items]
        pairs = [f"{k}: {v}" for k, v in zip(keys, items, strict=True)]
        return "{" + ", ".join(pairs) + trailing + "}"
    return random_call(rng, depth + 1)


def random_call(rng: random.Random, depth: int = 0) -> str:
    name = rng.choice(["f", "math.factorial", "a.b.c", "get_weather", "_x1"])
    keywords = ["a", "b", "unit", "city", "x_1", "lambda_", rng.choice(["c", "if"])]
    names = rng.sample(keywords, rng.randint(0, 3))
    if names and rng.random() < 0.1:
        names.append(rng.choice(names))  # repeated: ast.parse takes it
    arguments = [f"{n}={random_value(rng, depth)}" for n in names]
    if rng.random() < 0.1:
        arguments.insert(0, random_value(rng, depth))  # positional, ignored
    if rng.random() < 0.1:
        arguments.insert(rng.randint(0, len(arguments)), "**" + random_value(rng, depth))
    space = rng.choice(["", " ", "\n", "  "])
    return f"{name}({(',' + space).join(arguments)})"


def random_text(rng: random.Random) -> str:
    text = "[" + ", ".join(random_call(rng) for _ in range(rng.randint(1, 3))) + "]"
    for _ in range(rng.choice([0, 0, 1, 2])):  # mutations: insert, delete or replace
        at = rng.randint(0, len(text))
        cut = rng.randint(0, 2)
        text = text[:at] + rng.choice(["", rng.choice(TOKENS)]) + text[at + cut :]
    return rng.choice([text, text[1:-1], text, "`" + text + "`\n"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_generated_and_mutated_texts_read_as_ast_reads_them() -> None:
    rng = random.Random(20260323)
    read_here = 0
    for _ in range(2500):
        text = random_text(rng)
        read = read_python_calls(bracketed(text))
        by_ast = ast_calls(text)
        if read is not None:
            read_here += 1
            assert same(read, by_ast), text
        try:
            decoded: Any = prompt_calls(text, "python", "python")
        except DecodeFailure as exc:
            decoded = f"{exc.error_type}: {exc}"
        if isinstance(by_ast, str):
            assert decoded == f"ast_decoder:decoder_failed: cannot decode the output: {by_ast[7:]}"
        else:
            assert same(decoded, by_ast), text
    assert read_here > 600  # a good share of the generated texts is in the common shape


def test_adversarial_text_keeps_its_bounds() -> None:
    deep = "[f(a=" + "[" * 100_000 + "]" * 100_000 + ")]"
    with pytest.raises(DecodeFailure):
        prompt_calls(deep[:-1000], "python", "python")  # unclosed and deep
    with pytest.raises(DecodeFailure, match=r"nested too deeply|not Python call syntax"):
        prompt_calls("[f(a=" + "[" * 40_000 + "]" * 40_000 + ")]", "python", "python")
    with pytest.raises(DecodeFailure, match="not Python call syntax"):
        prompt_calls("[f(a=" + "9" * 5000 + ")]", "python", "python")  # int digits limit
    with pytest.raises(DecodeFailure, match="not Python call syntax"):
        prompt_calls("[f(a='" + "x" * 90_000 + ")]", "python", "python")  # unclosed string
    many = "[" + ", ".join(f"f(a={i})" for i in range(5_000)) + "]"
    assert len(prompt_calls(many, "python", "python")) == 5_000
