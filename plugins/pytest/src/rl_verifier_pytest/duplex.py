"""PREFERRED mode: tests and solution in two sandboxed processes, plain data between them.

Used for HumanEval-style tasks (``check(candidate)``). The test process never imports
the solution; ``candidate`` is a proxy whose calls the trusted host relays to the
solution process. See README "Tamper-proofing".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from rl_verifier_pytest.harness_files import mounted
from rl_verifier_pytest.relay import Exchange, converse
from rl_verifier_sandbox import Job, Limits, LiveProcess, Policy

SPEC_PATH = "/spec/task.json"
SOLUTION_PATH = "solution.py"  # in the fresh work dir (the cwd)

Spawner = Callable[[Job], LiveProcess]  # ``Sandbox.open_process``


@dataclass(frozen=True)
class CheckTask:
    """A HumanEval-style task: ``test`` defines ``check(candidate)``."""

    test: str
    entry_point: str
    prompt: str = ""


def solution_job(task: CheckTask, code: str, limits: Limits) -> Job:
    return Job(
        argv=("python", "-I", "-S", "/harness/serve.py", task.entry_point, SOLUTION_PATH),
        files={"solution.py": code},
        limits=limits,
        policy=Policy(python=True, readonly_files=mounted("serve.py", "wire.py")),
    )


def tests_job(task: CheckTask, split: bool, stop_on_failure: bool, limits: Limits) -> Job:
    spec = {
        "prompt": task.prompt,
        "test": task.test,
        "entry_point": task.entry_point,
        "split": split,
        "stop_on_failure": stop_on_failure,
    }
    files = {**mounted("check.py", "wire.py"), SPEC_PATH: json.dumps(spec)}
    return Job(
        argv=("python", "-I", "-S", "/harness/check.py", SPEC_PATH),
        limits=limits,
        policy=Policy(python=True, readonly_files=files),
    )


def run_duplex(
    task: CheckTask,
    code: str,
    limits: Limits,
    *,
    split: bool,
    stop_on_failure: bool,
    spawner: Spawner,
    budget_s: float | None = None,
) -> tuple[Exchange, str]:
    """Run the conversation, for at most ``budget_s`` (default: the wall limit); the
    exchange and the test process's stderr tail."""
    tests = spawner(tests_job(task, split, stop_on_failure, limits))
    try:
        solution = spawner(solution_job(task, code, limits))
    except BaseException:
        tests.finish()
        raise
    try:
        exchange = converse(tests, solution, limits.wall_s if budget_s is None else budget_s)
    finally:
        solution.finish()
        tests.finish()
    return exchange, tests.stderr.decode(errors="replace")[-2000:]
