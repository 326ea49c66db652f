"""Opt-in single-process mode for pytest-file tasks (``pytest_mode: single-process``):
build the job, judge its frames. The default is the two-process mode (``pyfiles``).

The tests must share a process with the solution here, so the host trusts only what
it can cross-check: one result frame carrying this run's random nonce, a tripwire
test (random name, always fails) reported as failed, every test function of the file
reported, at least the expected number of tests, and each pass confirmed both by its
report and by an independent wrapper around the test call. See README for what this
mode cannot stop.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rl_verifier_pytest.harness_files import mounted, source
from rl_verifier_pytest.reference import PytestTask
from rl_verifier_sandbox import Job, Limits, Policy, Result

TESTS_DIR = "/tests"
HIDDEN = f"{TESTS_DIR}/test_hidden.py"
INI = f"{TESTS_DIR}/pytest.ini"
BOOT = f"{TESTS_DIR}/rlv_boot.py"

Runner = Callable[[Job], Result]


@dataclass(frozen=True)
class Run:
    nonce: str
    tripwire: str  # the tripwire test's function name
    tripwire_file: str


@dataclass
class Judgement:
    """Per expected test, passed or not; ``None`` results mean the run gave no verdict."""

    results: list[bool] | None
    ready: bool  # the harness started (before any solution code ran)
    tampered: bool = False
    notes: list[str] = field(default_factory=list)


def new_run() -> Run:
    token = secrets.token_hex(16)
    return Run(secrets.token_hex(16), f"test_rlv_tripwire_{token}", f"test_rlv_{token}.py")


def build_job(task: PytestTask, code: str, run: Run, limits: Limits, guard: bool) -> Job:
    tripwire_path = f"{TESTS_DIR}/{run.tripwire_file}"
    spec = {
        "ini": INI,
        "rootdir": TESTS_DIR,
        "files": [HIDDEN, tripwire_path],
        "guard": guard,
    }
    readonly: dict[str, str | bytes] = {
        HIDDEN: task.tests,
        tripwire_path: f"def {run.tripwire}():\n    assert False, 'tripwire'\n",
        INI: "[pytest]\n",
        BOOT: source("boot.py"),
        **mounted("failures.py", "walk.py", "watch.py"),
    }
    return Job(
        argv=("python", "-P", "-s", BOOT, json.dumps(spec)),
        files={"solution.py": code},
        stdin=(run.nonce + "\n").encode(),
        limits=limits,
        policy=Policy(
            python=True, readonly_files=readonly, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        ),
    )


def read_frames(stdout: bytes, nonce: str) -> tuple[bool, list[dict[str, Any]]]:
    ready = False
    frames: list[dict[str, Any]] = []
    for raw in stdout.decode(errors="replace").splitlines():
        if raw == f"RLV-READY {nonce}":
            ready = True
        elif raw.startswith(f"RLV-RESULT {nonce} "):
            try:
                frame = json.loads(raw[len(f"RLV-RESULT {nonce} ") :])
            except ValueError:
                frame = None
            frames.append(frame if isinstance(frame, dict) else {})
    return ready, frames


def test_key(nodeid: str) -> str:
    """``test_hidden.py::TestA::test_y[2]`` -> ``TestA::test_y``."""
    parts = nodeid.split("::")[1:]
    return "::".join(parts).split("[", 1)[0]


def judge(task: PytestTask, run: Run, result: Result) -> Judgement:
    ready, frames = read_frames(result.stdout, run.nonce)
    if len(frames) != 1:
        note = "no result frame" if not frames else "several result frames"
        return Judgement(None, ready, tampered=len(frames) > 1, notes=[note])
    frame = frames[0]
    reports, raised, returned = frame.get("reports"), frame.get("raised"), frame.get("returned")
    if not (isinstance(reports, dict) and isinstance(raised, dict) and isinstance(returned, dict)):
        return Judgement(None, ready, tampered=True, notes=["malformed result frame"])
    tripwire = [k for k in reports if test_key(k) == run.tripwire]
    judgement = Judgement(None, ready)
    tripped = len(tripwire) == 1 and reports[tripwire[0]] == "failed"
    if not tripped or raised.get(tripwire[0]) is not True or tripwire[0] in returned:
        judgement.tampered = True
        judgement.notes.append("tripwire test did not fail")
    own = {k: v for k, v in reports.items() if k not in tripwire}
    missing = task.names - {test_key(k) for k in own}
    if missing:
        judgement.notes.append(f"tests not reported: {sorted(missing)}")
    passed = [
        v == "passed" and raised.get(k) is False and returned.get(k) is True for k, v in own.items()
    ]
    passed += [False] * max(0, task.expected - len(passed))
    if missing or judgement.tampered:
        passed = [False] * len(passed)
    judgement.results = passed
    return judgement
