"""PREFERRED mode: tests and solution in two sandboxed processes, plain data between them.

Used for HumanEval-style tasks (``check(candidate)``, here) and, by default, pytest files
(``suite``). The test process never imports
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

SPEC_PATH = "task.json"  # the test process's task, in its fresh work dir (the cwd)
SOLUTION_PATH = "solution.py"  # in the fresh work dir (the cwd)
# Every harness script a two-process job mounts (a warm pool mounts them all once).
HARNESS_SCRIPTS = ("check.py", "failures.py", "remote.py", "serve.py", "suite.py", "wire.py")
# What the warm servers import before any job: the harness, and the standard modules that
# HumanEval's prompts, solutions and tests use (a fresh interpreter would import them per sample).
WARM_SCRIPTS = ("check.py", "serve.py", "remote.py", "failures.py", "wire.py")
WARM_STDLIB = ("typing", "math", "random", "copy", "string", "collections", "re", "hashlib")

Spawner = Callable[[Job], LiveProcess]  # ``Sandbox.open_process``


@dataclass(frozen=True)
class CheckTask:
    """A HumanEval-style task: ``test`` defines ``check(candidate)``."""

    test: str
    entry_point: str
    prompt: str = ""


def solution_job(entry: str, code: str, limits: Limits) -> Job:
    """The solution's process: answers calls of ``entry`` (``*``: any public name)."""
    return Job(
        argv=("python", "-I", "-S", "/harness/serve.py", entry, SOLUTION_PATH),
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
    return Job(
        argv=("python", "-I", "-S", "/harness/check.py", SPEC_PATH),
        files={SPEC_PATH: json.dumps(spec)},
        limits=limits,
        policy=Policy(
            python=True, readonly_files=mounted("check.py", "failures.py", "remote.py", "wire.py")
        ),
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
    """Run a HumanEval task's conversation (see ``converse_jobs``)."""
    tests = tests_job(task, split, stop_on_failure, limits)
    solution = solution_job(task.entry_point, code, limits)
    return converse_jobs(tests, solution, limits.wall_s if budget_s is None else budget_s, spawner)


def converse_jobs(
    tests_job: Job,
    solution_job: Job,
    budget_s: float,
    spawner: Spawner,
    start_s: float | None = None,
) -> tuple[Exchange, str]:
    """Start both processes and relay between them for at most ``budget_s`` (from the test
    process's ``READY`` where ``start_s`` bounds its start; see ``relay.converse``); the
    exchange and the test process's stderr tail."""
    tests = spawner(tests_job)
    try:
        solution = spawner(solution_job)
    except BaseException:
        tests.finish()
        raise
    try:
        exchange = converse(tests, solution, budget_s, start_s)
    finally:
        solution.finish()
        tests.finish()
    return exchange, tests.stderr.decode(errors="replace")[-2000:]
