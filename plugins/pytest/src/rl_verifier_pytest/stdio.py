"""stdin/stdout tasks: run the program sandboxed per case, compare outside the sandbox."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from rl_verifier_pytest.reference import StdioTask
from rl_verifier_sandbox import Job, Limits, Policy, Result

Runner = Callable[[Job], Result]
MIN_RUN_S = 0.5  # a case is not started with less of the sample's budget left than this


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

    All cases share ``budget_s`` (the sample's own deadline, less a margin): each run gets
    what is left of it at most, and cases left when it is spent are not run and count as
    failed (``limit`` wall), so a slow program scores 0 with status ok instead of
    overrunning the verifier's deadline."""
    results: list[bool] = []
    timed_out = False
    limit: str | None = None
    end = time.monotonic() + budget_s
    for stdin, expected in task.cases:
        left = end - time.monotonic()
        if stop_on_failure and results and not results[-1]:
            results.append(False)
            continue
        if left < MIN_RUN_S:
            results.append(False)
            timed_out, limit = True, limit or "wall"
            continue
        wall = min(limits.wall_s, left)
        run_limits = replace(limits, wall_s=wall, cpu_s=min(limits.cpu_s, wall))
        result = runner(case_job(code, stdin, run_limits))
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
