"""Read a task's ``reference`` into one of the three supported task formats."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any

from rl_verifier import parse_python
from rl_verifier_pytest.duplex import CheckTask


class ReferenceError(ValueError):
    """The task's reference is not in a supported format (a task problem, not the model's)."""


@dataclass(frozen=True)
class PytestTask:
    """A pytest file whose tests import ``solution``."""

    tests: str
    names: frozenset[str]  # test functions found in the file ("test_x", "TestA::test_y")
    expected: int  # fewest tests a run must report


@dataclass(frozen=True)
class StdioTask:
    """Programs judged on stdin/stdout pairs."""

    cases: tuple[tuple[str, str], ...]


TaskFormat = PytestTask | CheckTask | StdioTask


def read_reference(reference: dict[str, Any]) -> TaskFormat:
    if isinstance(reference.get("tests"), str):
        return read_pytest(reference)
    if isinstance(reference.get("test"), str):
        entry = reference.get("entry_point")
        prompt = reference.get("prompt", "")
        if not isinstance(entry, str) or not entry.isidentifier():
            raise ReferenceError("reference.entry_point must name the function under test")
        if not isinstance(prompt, str):
            raise ReferenceError("reference.prompt must be a string")
        for key, source in (("prompt", prompt), ("test", reference["test"])):
            problem = compile_error(source)
            if problem:
                raise ReferenceError(f"reference.{key} does not compile: {problem}")
        return CheckTask(reference["test"], entry, prompt)
    if "cases" in reference:
        return read_cases(reference["cases"])
    raise ReferenceError(
        "reference needs 'tests' (a pytest file), 'test' + 'entry_point' (HumanEval) "
        "or 'cases' (stdin/stdout pairs)"
    )


@functools.lru_cache(maxsize=4096)
def compile_error(source: str) -> str | None:
    """Why ``source`` does not compile as a module (the test process would fail on it for
    every sample), or None; cached, so a task is compiled once, not once per sample."""
    try:
        compile(parse_python(source), "<reference>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return str(exc)
    return None


def read_pytest(reference: dict[str, Any]) -> PytestTask:
    source = reference["tests"]
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError) as exc:
        raise ReferenceError(f"reference.tests does not parse: {exc}") from None
    names = frozenset(test_names(tree))
    declared = reference.get("expected_tests", 0)
    if type(declared) is not int or declared < 0:
        raise ReferenceError("reference.expected_tests must be a non-negative integer")
    if not names:
        raise ReferenceError("reference.tests defines no test functions")
    return PytestTask(source, names, max(declared, len(names)))


def test_names(tree: ast.Module) -> list[str]:
    found: list[str] = []
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and node.name.startswith("test"):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, functions) and item.name.startswith("test")
            ]
    return found


def read_cases(cases: Any) -> StdioTask:
    if not isinstance(cases, list) or not cases:
        raise ReferenceError("reference.cases must be a non-empty list")
    pairs = []
    for case in cases:
        if not (
            isinstance(case, dict)
            and isinstance(case.get("input"), str)
            and isinstance(case.get("output"), str)
        ):
            raise ReferenceError("each case needs string 'input' and 'output'")
        pairs.append((case["input"], case["output"]))
    return StdioTask(tuple(pairs))
