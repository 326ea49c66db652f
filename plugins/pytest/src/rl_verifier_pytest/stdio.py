"""stdin/stdout tasks: run the program sandboxed per case, compare outside the sandbox."""

from __future__ import annotations

import time
from collections.abc import Callable

from rl_verifier_pytest.reference import StdioTask
from rl_verifier_sandbox import Job, Limits, Policy, Result

Runner = Callable[[Job], Result]


def normalise(text: str) -> str:
    """Trailing whitespace removed from each line, trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def case_job(code: str, stdin: str, limits: Limits) -> Job:
    return Job(
        argv=("python", "-I", "solution.py"),
        files={"solution.py": code},
        stdin=stdin.encode(),
        limits=limits,
        policy=Policy(python=True),
    )


def run_cases(
    task: StdioTask,
    code: str,
    limits: Limits,
    runner: Runner,
    stop_on_failure: bool,
    budget_s: float,
) -> tuple[list[bool], bool, str | None]:
    """Per case, whether the output matched; whether any run hit its deadline; and the
    first limit a run hit (``wall`` for the deadline), if any.

    Cases that could not finish within ``budget_s`` (the sample's own deadline, less a
    margin) are not run and count as failed, so a slow program scores 0 with status ok
    instead of overrunning the verifier's deadline."""
    results: list[bool] = []
    timed_out = False
    limit: str | None = None
    end = time.monotonic() + budget_s
    for stdin, expected in task.cases:
        failed_before = stop_on_failure and results and not results[-1]
        if failed_before or time.monotonic() + limits.wall_s > end:
            results.append(False)
            continue
        result = runner(case_job(code, stdin, limits))
        timed_out |= result.timed_out
        limit = limit or ("wall" if result.timed_out else result.limit_hit)
        passed = (
            not result.timed_out
            and result.exit_code == 0
            and not result.stdout_truncated
            and normalise(result.stdout.decode(errors="replace")) == normalise(expected)
        )
        results.append(passed)
    return results, timed_out, limit
