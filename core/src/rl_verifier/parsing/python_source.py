"""Parsing Python source safely from many threads at once.

CPython 3.11's ``ast.parse`` keeps its AST-building recursion counter in interpreter-wide
state, so two threads parsing at the same moment can fail with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905). Verifiers run in threads
(``asyncio.to_thread``), so every parse in rl-verifier and its plugins goes through here,
one at a time. A parse takes about 0.3 ms per KiB of source (timeit, 2 cores): a tool call's
few hundred bytes, or a test file beside the 5 to 60 ms of the sandboxed run it precedes.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_PARSE_LOCK = threading.Lock()


@overload
def parse_python(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...


@overload
def parse_python(source: str, mode: Literal["eval"]) -> ast.Expression: ...


def parse_python(
    source: str, mode: Literal["exec", "eval"] = "exec"
) -> ast.Module | ast.Expression:
    """``ast.parse(source, mode=mode)``, serialised across threads; raises what it raises."""
    with _PARSE_LOCK:
        tree = ast.parse(source, mode=mode)
    assert isinstance(tree, ast.Module | ast.Expression)
    return tree
