"""``parse_python``: ``ast.parse`` that survives many threads parsing at once."""

from __future__ import annotations

import ast
import re
import threading
import time
from pathlib import Path

import pytest

from rl_verifier import parse_python

REPO = Path(__file__).resolve().parents[2]
FUNCTION = "def f{i}(a, b):\n    return [a * b + {i} for _ in range(3)]"
SOURCE = "\n".join(FUNCTION.format(i=i) for i in range(100))


class CyclicWithFinaliser:
    """Garbage that runs Python code when the collector frees it, mid-parse in another thread."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)  # lets the interpreter switch threads


def parse_while_collecting(errors: list[BaseException], depth: int) -> None:
    if depth:  # each thread parses at a different stack depth, as the real workers do
        parse_while_collecting(errors, depth - 1)
        return
    for _ in range(100):
        try:
            parse_python(SOURCE)
        except SystemError as exc:
            errors.append(exc)
            return
        for _ in range(20):
            CyclicWithFinaliser()


def test_many_threads_parse_without_recursion_depth_errors() -> None:
    # Plain ast.parse under this load fails on CPython 3.11.7 with "AST constructor
    # recursion depth mismatch" in five runs out of five (python/cpython#106905).
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=parse_while_collecting, args=(errors, 3 * i)) for i in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_parses_as_ast_parse_does() -> None:
    assert ast.dump(parse_python(SOURCE)) == ast.dump(ast.parse(SOURCE))
    expression = parse_python("[f(a=1)]", mode="eval")
    assert isinstance(expression, ast.Expression)
    with pytest.raises(SyntaxError):
        parse_python("def (")


def test_no_threaded_code_calls_ast_parse_directly() -> None:
    # The sandboxed harnesses run alone in their own process, so they may parse directly.
    direct = re.compile(r"\bast\.parse\(")
    offenders = [
        str(path.relative_to(REPO))
        for root in ("core/src", "server/src", "sandbox/src", "plugins")
        for path in (REPO / root).rglob("*.py")
        if "/tests/" not in str(path)
        and "/harness/" not in str(path)
        and path.name != "python_source.py"
        and direct.search(path.read_text())
    ]
    assert offenders == []
