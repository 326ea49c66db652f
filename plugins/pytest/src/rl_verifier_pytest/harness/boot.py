"""HARDENED single-process mode: run a pytest file against ``solution`` (runs sandboxed).

Read-only, outside the work dir: this script, the tests, a tripwire test and an empty
ini file. The run nonce arrives on stdin and is read before any solution code runs.
Outcomes are recorded twice (from the test reports and from an independent wrapper
around each test call) and written as one nonce-framed JSON line on the original
stdout; the solution's own prints go to stderr.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def plain(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    if kind not in PLAIN or depth > 100:
        return False
    if kind in (list, tuple, set, frozenset):
        return all(plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in value.items())
    return True


def guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if not plain(result):
            raise TypeError(f"{function.__name__} returned {type(result).__name__}, not plain data")
        return result

    return wrapper


def guard_solution() -> None:
    """Import ``solution`` and make its public functions return plain data only."""
    try:
        import solution  # type: ignore[import-not-found]
    except BaseException:  # noqa: BLE001 - the tests will report the import failure
        sys.modules.pop("solution", None)
        return
    if type(solution) is not types.ModuleType:
        sys.modules.pop("solution", None)
        return
    for name, value in list(vars(solution).items()):
        if type(value) is types.FunctionType and not name.startswith("_"):
            setattr(solution, name, guarded(value))


class Reporter:
    """Records each test three ways: its report, whether its call raised, and whether
    the test function itself returned (a wrapper set on each item after collection)."""

    def __init__(self, guard: bool) -> None:
        self.guard = guard
        self.reports: dict[str, str] = {}
        self.raised: dict[str, bool] = {}
        self.returned: dict[str, bool] = {}
        self.collect_errors = 0

    def pytest_sessionstart(self, session: Any) -> None:
        # Imported only now, after every hook implementation is registered.
        if self.guard:
            guard_solution()

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
            returned[nodeid] = True
            return result

        return body

    def record(self, nodeid: str, outcome: str) -> None:
        if self.reports.get(nodeid) in (None, "passed"):
            self.reports[nodeid] = outcome

    def pytest_runtest_logreport(self, report: Any) -> None:
        if getattr(report, "wasxfail", None) is not None:
            self.record(report.nodeid, "xfailed")
        elif report.when == "call" or not report.passed:
            self.record(report.nodeid, report.outcome)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors += 1


def wrap_call(reporter: Reporter) -> object:
    import pytest

    class CallWatch:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_call(self, item: Any) -> Any:
            outcome = yield
            reporter.raised[item.nodeid] = outcome.excinfo is not None

    return CallWatch()


def main() -> None:
    nonce = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    spec = json.loads(sys.argv[1])
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.path.insert(0, os.getcwd())
    sys.dont_write_bytecode = True
    import pytest

    out.write(f"RLV-READY {nonce}\n")  # the harness is up; no solution code has run yet
    reporter = Reporter(spec["guard"])
    args = [
        "-c",
        spec["ini"],
        "--rootdir",
        spec["rootdir"],
        "-p",
        "no:cacheprovider",
        "--noconftest",
        "-q",
        "--import-mode=importlib",
        "-o",
        "addopts=",
        "-p",
        "no:randomly",
        "-p",
        "no:xdist",
        *spec["files"],
    ]
    code = pytest.main(args, plugins=[reporter, wrap_call(reporter)])
    frame = {
        "reports": reporter.reports,
        "raised": reporter.raised,
        "returned": reporter.returned,
        "collect_errors": reporter.collect_errors,
        "exit": int(code),
    }
    out.write(f"RLV-RESULT {nonce} {json.dumps(frame)}\n")
    out.flush()
    os._exit(0)


main()
