"""Test side of the two-process mode for pytest files (runs sandboxed; stdlib + pytest).

The tests run here against a proxy ``solution`` module: every public name the tests import
or read from it is a function whose calls go over the plain-data channel (``remote``) to the
solution's own process. No solution code runs in this interpreter, and whatever the solution
raises arrives as a ``remote.CandidateError``, which no protocol reads as a signal. A test
passes when pytest reports it passed and its function was seen to return (the assertions
ran to the end) with every failed call seen by Python code (``failures``); the
outcomes leave once, as ``END <json>``, on this process's own stdout.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import os
import sys
import types
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import failures, remote, wire
else:  # inside the sandbox, next to this script
    sys.path.insert(0, "/harness")
    import failures
    import remote
    import wire


class Proxy(types.ModuleType):
    """``solution``: each public attribute is a remote function of that name."""

    def __init__(self, out: IO[bytes], inp: IO[bytes], star: list[str]) -> None:
        super().__init__("solution")
        self._channel = (out, inp)
        self.__all__ = star  # what ``from solution import *`` gives the tests

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        function = remote.function(name, *self._channel)
        setattr(self, name, function)
        return function


class Reporter:
    """Outcome per test: its call's report, or the first failed setup/teardown, and whether
    its function returned (a wrapper set on each test after collection). Says ``READY``
    once the tests are collected: the solution's time starts then."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.reports: dict[str, str] = {}
        self.returned: set[str] = set()
        self.lost_in_collection: list[BaseException] = []  # the test module's own top level

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            function = getattr(item, "obj", None)
            if callable(function):
                item.obj = self.watch(item.nodeid, function)

    def watch(self, nodeid: str, function: Callable[..., Any]) -> Callable[..., Any]:
        returned = self.returned

        @functools.wraps(function)
        def body(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            lost = self.lost_in_collection or failures.unseen()
            if lost:
                raise AssertionError(f"a failed call was cut short, unseen: {lost[0]!r}")
            returned.add(nodeid)
            return result

        return body

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        failures.clear()  # before the test's fixtures are set up

    def pytest_collection_finish(self, session: Any) -> None:
        self.lost_in_collection = failures.unseen()
        self.out.write(b"READY\n")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if getattr(report, "wasxfail", None) is not None:
            outcome = "xfailed"
        elif report.when == "call" or not report.passed:
            outcome = report.outcome
        else:
            return
        if self.reports.get(report.nodeid) in (None, "passed"):
            self.reports[report.nodeid] = outcome


def star_names(path: str) -> list[str]:
    """For tests that say ``from solution import *``: the names they use but never bind
    (nor get from the builtins), which the star import must then provide."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    starred = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "solution"
        and any(alias.name == "*" for alias in node.names)
        for node in ast.walk(tree)
    )
    if not starred:
        return []
    bound: set[str] = set(dir(builtins))
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return sorted(name for name in used - bound if not name.startswith("_"))


def test_key(nodeid: str) -> str:
    """``test_hidden.py::TestA::test_y[2]`` -> ``TestA::test_y`` (as the host names tests)."""
    return "::".join(nodeid.split("::")[1:]).split("[", 1)[0]


def results(spec: dict[str, Any], reports: dict[str, str], returned: set[str]) -> list[bool]:
    """One bool per reported test: passed, and its function returned. A test function of
    the file that was never reported fails everything (it cannot be scored), and missing
    tests up to ``expected`` fail."""
    passed = [outcome == "passed" and key in returned for key, outcome in reports.items()]
    if set(spec["names"]) - {test_key(k) for k in reports}:
        passed = [False] * len(passed)
    return passed + [False] * max(0, spec["expected"] - len(passed))


def main() -> None:
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    inp = os.fdopen(os.dup(0), "rb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    spec = json.loads(sys.argv[1])
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.dont_write_bytecode = True
    sys.modules["solution"] = Proxy(out, inp, star_names(spec["file"]))
    import pytest

    reporter = Reporter(out)
    args = [
        *("-c", spec["ini"], "--rootdir", spec["rootdir"], "-p", "no:cacheprovider"),
        *("--noconftest", "-q", "--import-mode=importlib", "-o", "addopts="),
        spec["file"],
    ]
    pytest.main(args, plugins=[reporter])
    out.write(b"END " + wire.dumps({"results": results(spec, reporter.reports, reporter.returned)}))
    os._exit(0)


main()
