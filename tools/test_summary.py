"""`make test`'s last line: passed, failed, skipped (reasons grouped) and wall time.

Usage: python tools/test_summary.py SUMMARY_JSON STARTED_EPOCH EXIT_STATUS [TARGET]
TARGET names the make target in the line (default "make test"). SUMMARY_JSON is what the
repository's conftest.py wrote (absent when pytest never ran)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def line(summary: Path, started: float, status: int, target: str = "make test") -> str:
    wall = minutes(time.time() - started)
    verdict = "green" if status == 0 else f"FAILED (exit {status})"
    if not summary.is_file():
        return f"{target}: {verdict}; pytest did not run (lint or typecheck failed); {wall}"
    record = json.loads(summary.read_text())
    counts = record["counts"]
    failed = counts["failed"] + counts["error"]
    reasons = "; ".join(f"{n}: {why}" for why, n in sorted(record["skip_reasons"].items()))
    skipped = f"{counts['skipped']} skipped" + (f" ({reasons})" if reasons else "")
    pytest_wall = record.get("pytest_wall_s")
    of_pytest = f", pytest {minutes(pytest_wall)}" if pytest_wall is not None else ""
    return (
        f"{target}: {verdict}: {counts['passed']} passed, {failed} failed, {skipped}; "
        f"wall {wall}{of_pytest}"
    )


if __name__ == "__main__":
    print(line(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5]))
