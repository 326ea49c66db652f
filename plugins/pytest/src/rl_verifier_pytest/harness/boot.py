"""HARDENED single-process mode: run a pytest file against ``solution`` (runs sandboxed).

Read-only, outside the work dir: this script, the tests, a tripwire test, an empty ini
file and ``/harness/{failures,walk,watch}.py``. The run nonce arrives on stdin and is read
before any solution code runs; the solution is imported, and its code watched (``walk``),
at the session's start. Outcomes are recorded three ways (the test reports, an independent
wrapper around each test call, and whether each test function returned with the builtins
as they were before the solution was imported, no failed assert and every failure of the
solution seen: ``failures``) and written as one nonce-framed JSON line on the original
stdout; the solution's own prints go to stderr.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import failures, walk
else:  # mounted read-only next to the other harness scripts
    sys.path.insert(0, "/harness")
    import failures
    import walk


def watch_solution(plain_only: bool) -> None:
    """Import ``solution`` and watch its functions and classes (see ``walk``). A solution
    that fails to import stays unimportable (a second try could succeed, unwatched); one
    that cannot be watched fails every test."""
    try:
        import solution  # type: ignore[import-not-found]
    except BaseException:  # noqa: BLE001 - the tests fail to import it in turn
        sys.modules["solution"] = None  # type: ignore[assignment]
        return
    if type(solution) is not types.ModuleType or not isinstance(solution.__file__, str):
        sys.modules["solution"] = None  # type: ignore[assignment]
        return
    try:
        walk.watch_module(solution, solution.__file__, plain_only)
    except Exception:  # noqa: BLE001 - kept unseen until the tests are collected
        failures.record(RuntimeError("the solution's code could not be watched"))


def count_failed_asserts() -> None:
    """Keep each failed ``assert`` of the tests as a failure no code saw, so that a test
    passes only if none failed, whoever caught the ``AssertionError`` (a solution's
    ``__exit__``, a ``contextlib.suppress`` it returned). pytest's rewritten asserts call
    this helper on failure only."""
    from _pytest.assertion import rewrite

    explain = rewrite._format_explanation  # type: ignore[attr-defined]

    def explained(explanation: str) -> str:
        failures.record(AssertionError("an assert of the tests failed"))
        return explain(explanation)

    rewrite._format_explanation = explained  # type: ignore[attr-defined]


def patched_builtins(before: dict[str, Any], item: Any) -> list[str]:
    """The names of ``builtins`` that differ from ``before`` (added, removed or rebound),
    but for those the test's own ``monkeypatch`` set (``input``, say)."""
    now, gone = vars(builtins), object()
    names = before.keys() | now.keys()
    patched = {k for k in names if now.get(k, gone) is not before.get(k, gone)}
    monkeypatch = getattr(item, "funcargs", {}).get("monkeypatch")
    for target, name, _ in getattr(monkeypatch, "_setattr", ()):
        if target is builtins:
            patched.discard(name)
    return sorted(patched)


class Reporter:
    """Records each test three ways: its report, whether its call raised, and whether
    the test function itself returned (a wrapper set on each item after collection) with
    the builtins unchanged since before the solution was imported."""

    def __init__(self, guard: bool) -> None:
        self.guard = guard
        self.builtins = dict(vars(builtins))  # no solution code has run yet
        self.reports: dict[str, str] = {}
        self.raised: dict[str, bool] = {}
        self.returned: dict[str, bool] = {}
        self.collect_errors = 0
        self.lost_in_collection: list[BaseException] = []  # the test module's own top level

    def pytest_sessionstart(self, session: Any) -> None:
        # Imported only now, after every hook implementation is registered.
        watch_solution(self.guard)

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            function = getattr(item, "obj", None)
            if callable(function):
                item.obj = self.watch(item, function)

    def watch(self, item: Any, function: Callable[..., Any]) -> Callable[..., Any]:
        returned, nodeid = self.returned, item.nodeid

        @functools.wraps(function)
        def body(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            patched = patched_builtins(self.builtins, item)
            if patched:  # all(), abs(), isinstance(), ... may not be the tests' own
                raise AssertionError(f"builtins changed during the test: {patched[:5]}")
            lost = self.lost_in_collection or failures.unseen()
            if lost:
                raise AssertionError(f"a failure was cut short, unseen: {lost[0]!r}")
            returned[nodeid] = True
            return result

        return body

    def pytest_collection_finish(self, session: Any) -> None:
        self.lost_in_collection = failures.unseen()  # since the solution was imported

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        failures.clear()  # before the test's fixtures are set up

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

    count_failed_asserts()
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
