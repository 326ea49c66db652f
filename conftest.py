"""Repository-wide test set-up: tests that need a system component say so once.

``@pytest.mark.requires("bwrap")`` skips a test, before its fixtures run, when the
command is not on PATH, with one reason per missing component (``pytest -ra`` groups
them: "SKIPPED [76] ... bwrap is not installed"). ``make system-deps`` installs them.

The Lean 4 of June 2021 beside the repository (``../shared/lean4-2021``, see its README) is
the `lean` plugin's REPL in this session (``RLV_LEAN_REPL``) wherever it exists and no other
Lean is configured (``RLV_LEAN_REPL``, ``RLV_LEAN_PROJECT`` or ``repl`` on PATH), so the
real-kernel tests and the Lean recipe run against it; elsewhere they skip.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest

LEAN_2021_FRONT = Path(__file__).resolve().parent.parent / "shared" / "lean4-2021" / "repl"
if (
    LEAN_2021_FRONT.is_file()
    and not any(os.environ.get(v) for v in ("RLV_LEAN_REPL", "RLV_LEAN_PROJECT"))
    and shutil.which("repl") is None
):
    os.environ["RLV_LEAN_REPL"] = shlex.quote(str(LEAN_2021_FRONT))

# command -> how to get it. Debian packages come from the Makefile's tools/system-deps.sh.
HOW_TO_GET = {
    "bwrap": "Debian package bubblewrap; run `make system-deps` as root",
    "chromium": "Debian package chromium; run `make system-deps` as root",
    "chromedriver": "Debian package chromium-driver; run `make system-deps` as root",
    "lean-repl": "a Lean REPL: ../shared/lean4-2021, RLV_LEAN_REPL or RLV_LEAN_PROJECT",
}


def _lean_repl_found() -> bool:
    """Whether the `lean` plugin can launch a REPL here (a project, a front or `repl`)."""
    from rl_verifier_lean.config import LeanConfig
    from rl_verifier_lean.locate import LeanMissing, repl_launch

    try:
        repl_launch(LeanConfig(), sandboxed=False)
    except LeanMissing:
        return False
    return True


# requirements that are not one command on PATH -> how to tell
FOUND_BY = {"lean-repl": _lean_repl_found}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*commands): skip unless each command is on PATH (system packages)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        for command in mark.args:
            found = FOUND_BY[command]() if command in FOUND_BY else shutil.which(command)
            if not found:
                how = HOW_TO_GET.get(command, "not provided by `make system-deps`")
                pytest.skip(f"{command} is not installed here ({how})")


# The suite's health in one record, for `make test`'s last line (tools/test_summary.py):
# counts, the skip reasons grouped, pytest's wall time. Written where RLV_TEST_SUMMARY says.
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    target = os.environ.get("RLV_TEST_SUMMARY")
    if not target or hasattr(terminalreporter.config, "workerinput"):
        return
    import json
    import time
    from collections import Counter

    stats = terminalreporter.stats
    reasons: Counter[str] = Counter()
    for report in stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    counts = {
        key: len([r for r in stats.get(key, []) if getattr(r, "when", "call") != "teardown"])
        for key in ("passed", "failed", "error", "xfailed", "xpassed")
    }
    counts["skipped"] = sum(reasons.values())
    started = getattr(terminalreporter, "_session_start", None)
    wall = time.time() - started.time if started is not None else None
    record = {"counts": counts, "skip_reasons": dict(reasons), "pytest_wall_s": wall}
    Path(target).write_text(json.dumps(record))
