"""Default mode for pytest files: the tests in one sandboxed process, the solution in another.

The test process runs pytest on the task's file with a proxy ``solution`` module
(``harness/suite.py``): each function the tests import from it forwards its calls, as plain
data, through the trusted host (``relay``) to the solution's process (``harness/serve.py``
with ``*``: any public name). The solution never shares an interpreter with pytest or the
reporter, so import hooks, patched reports and edited records cannot reach the verdict.
"""

from __future__ import annotations

import json

from rl_verifier_pytest.duplex import Spawner, converse_jobs, solution_job
from rl_verifier_pytest.harness_files import mounted
from rl_verifier_pytest.reference import PytestTask
from rl_verifier_pytest.relay import Exchange
from rl_verifier_sandbox import Job, Limits, Policy

TESTS_DIR = "/tests"
HIDDEN = f"{TESTS_DIR}/test_hidden.py"
INI = f"{TESTS_DIR}/pytest.ini"
ANY = "*"  # the solution process answers calls of any public name


def suite_job(task: PytestTask, limits: Limits) -> Job:
    spec = {
        "ini": INI,
        "rootdir": TESTS_DIR,
        "file": HIDDEN,
        "names": sorted(task.names),
        "expected": task.expected,
    }
    files: dict[str, str | bytes] = {
        **mounted("suite.py", "failures.py", "remote.py", "wire.py"),
        HIDDEN: task.tests,
        INI: "[pytest]\n",
    }
    return Job(
        argv=("python", "-s", "/harness/suite.py", json.dumps(spec)),
        limits=limits,
        policy=Policy(
            python=True, readonly_files=files, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        ),
    )


def run_pytest_file(
    task: PytestTask,
    code: str,
    limits: Limits,
    *,
    budget_s: float,
    start_s: float,
    spawner: Spawner,
) -> tuple[Exchange, str]:
    """The conversation's end and the test process's stderr tail. The solution's
    ``budget_s`` counts from the moment pytest has collected the tests (its start-up is
    the harness's time, not the solution's); all of it stays within ``start_s``."""
    tests, solution = suite_job(task, limits), solution_job(ANY, code, limits)
    return converse_jobs(tests, solution, budget_s, spawner, start_s)
