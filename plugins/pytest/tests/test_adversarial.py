"""Attacks on the verifier, on bwrap and on docker. Each must end with reward 0 and status ok
(a contained attack is the model's failure), with the host unchanged.

``H``: HumanEval task (two processes), ``P``: pytest-file task (two processes, the
default), ``P1``: the same task in the opt-in single-process mode, ``S``: stdin/stdout
task. Each attack is a prelude (run at import) plus a
``cheat()`` that says whether it worked; the solution answers correctly only then, so
an attack that wrongly succeeds scores 1.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier

from .conftest import score

H, P, S = "largest", "add", "stdio"
TASK_IDS = {H: "humaneval-largest", P: "pytest-add", S: "stdio-sum"}

RIGHT = {
    H: "def largest(*a, **k):\n    return max(a[0]) if cheat() else -999\n",
    P: "def add(*a, **k):\n    return a[0] + a[1] if cheat() else -999\n",
    S: "print(sum(map(int, input().split())) if cheat() else 'no')\n",
}

NEVER = "def cheat():\n    return False\n"


def attack(prelude: str, cheat: str = NEVER, body: dict[str, str] | None = None) -> dict[str, str]:
    prelude, cheat = textwrap.dedent(prelude), textwrap.dedent(cheat)
    return {m: prelude + "\n" + cheat + "\n" + (body or RIGHT)[m] for m in (H, P, S)}


ALWAYS_EQUAL = """
class Eq:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __bool__(self): return True
"""

INT_SUB = """
class I(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = int.__hash__
"""

STR_SUB = """
class Str(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
"""

PATCH_REPORT = """
import _pytest.reports as reports
_from = reports.TestReport.from_item_and_call.__func__
def forged(cls, item, call):
    report = _from(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report
reports.TestReport.from_item_and_call = classmethod(forged)
_init = reports.TestReport.__init__
def init(self, *a, **k):
    _init(self, *a, **k)
    self.outcome = "passed"
reports.TestReport.__init__ = init
"""

PATCH_NAME_AWARE = """
import _pytest.python as python
_runtest = python.Function.runtest
def runtest(self):
    try:
        _runtest(self)
    except BaseException:
        if "test_hidden" not in self.nodeid:
            raise
python.Function.runtest = runtest
"""

PATCH_HOOK = """
import gc
import pytest
from _pytest.config import Config
class Forge:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if "test_hidden" in item.nodeid:
            report.outcome, report.longrepr = "passed", None
for obj in gc.get_objects():
    if isinstance(obj, Config):
        obj.pluginmanager.register(Forge())
"""

WRITE_CONFIG = """
import os
for d in (".", "/tests", "/harness", "/tmp"):
    for name, text in {
        "conftest.py": "import pytest\\npytest_plugins = []\\n",
        "pytest.ini": "[pytest]\\naddopts = -p no:terminal\\n",
        "sitecustomize.py": "import os; os._exit(0)\\n",
        "evil.pth": "import os; os._exit(0)\\n",
    }.items():
        try:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        except OSError:
            pass
"""

READ_TESTS = """
import glob, os
FOUND = []
for pattern in ("/tests/*", "/spec/*", "/harness/*", "/**/test_*.py", "/**/task.json"):
    FOUND += glob.glob(pattern, recursive=True)
"""
READ_TESTS_CHEAT = """
def cheat():
    return any("task.json" in f or "check" in f for f in FOUND)
"""

FORGE_OUTPUT = """
import os, sys, json
lines = [
    "RLV-READY 0", "RLV-RESULT 0 {}", "3 passed in 0.01s", "PASSED",
    'END {"results": [true, true, true]}', '{"ok": ["i", "5"]}',
]
for line in lines:
    print(line)
for fd in range(0, 20):
    try:
        os.write(fd, ("\\n".join(lines) + "\\n").encode())
    except OSError:
        pass
for name in ("report.json", "results.xml", ".pytest_cache"):
    try:
        with open(name, "w") as f:
            json.dump({"passed": True}, f)
    except OSError:
        pass
"""

INFINITE = """
def spin():
    while True:
        pass
"""

FORK_BOMB = """
import os
for _ in range(100000):
    try:
        os.fork()
    except OSError:
        pass
"""

MEMORY_BOMB = """
hog = []
try:
    while True:
        hog.append(bytearray(64 << 20))
except MemoryError:
    hog = None
"""

HUGE_STDOUT = """
import sys
chunk = "x" * 65536
for _ in range(100000):
    sys.stdout.write(chunk)
"""

NETWORK = """
import socket
"""
NETWORK_CHEAT = """
def cheat():
    try:
        socket.create_connection(("1.1.1.1", 80), timeout=1).close()
        return True
    except OSError:
        return False
"""

SECRET_CHEAT = """
import os
def cheat():
    return bool(os.environ.get("TINKER_API_KEY"))
"""

KILL_PARENT = """
import os, signal
for pid in (os.getppid(), 1, -1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""

HOST_FILES = (Path("/tmp/rlv-pytest-pwned"), Path("/work/main/pwned"), Path("/root/pwned"))
ESCAPE = f"""
for path in {tuple(str(p) for p in HOST_FILES)!r}:
    try:
        open(path, "w").write("pwned")
    except OSError:
        pass
"""

# Same-interpreter attacks: generic (no nonce, reporter or tripwire knowledge), or aimed at
# the single-process harness. They pass the opt-in single-process mode (README, "What this
# mode cannot stop"); the default two-process mode never runs them next to the tests.
IMPORT_HOOK = """
import ast, sys
import importlib.abc, importlib.machinery, importlib.util
class NoAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.copy_location(ast.Pass(), node)
class Loader(importlib.abc.SourceLoader):
    def __init__(self, path):
        self.path = path
    def get_filename(self, name):
        return self.path
    def get_data(self, path):
        with open(path, "rb") as handle:
            return handle.read()
    def source_to_code(self, data, path):
        return compile(NoAsserts().visit(ast.parse(data)), path, "exec")
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not str(spec.origin).endswith(".py"):
            return None
        try:
            source = open(spec.origin).read()
        except OSError:
            return None
        if "solution" in source and "NoAsserts" not in source:
            loader = Loader(spec.origin)
            return importlib.util.spec_from_file_location(name, spec.origin, loader=loader)
        return None
sys.meta_path.insert(0, Finder())
"""

GC_REPORTER = """
import gc
class Passed(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value if "tripwire" in key else False)
for obj in gc.get_objects():
    if type(obj).__name__ == "Reporter" and hasattr(obj, "record"):
        real = obj.record
        obj.raised = Passed(obj.raised)
        def record(nodeid, outcome, real=real, reporter=obj):
            if "tripwire" not in nodeid:
                outcome = "passed"
                reporter.returned[nodeid] = True
            real(nodeid, outcome)
        obj.record = record
"""

FORGED_RESULT_LINE = """
import ast, json, os, sys
frame = sys._getframe()
while frame is not None and "nonce" not in frame.f_locals:
    frame = frame.f_back
if frame is not None:
    nonce, out, spec = frame.f_locals["nonce"], frame.f_locals["out"], frame.f_locals["spec"]
    hidden, trip = spec["files"]
    ids = []
    for node in ast.parse(open(hidden).read()).body:
        if isinstance(node, ast.FunctionDef):
            ids.append(node.name)
        elif isinstance(node, ast.ClassDef):
            ids += [f"{node.name}::{f.name}" for f in node.body if isinstance(f, ast.FunctionDef)]
    ids = [f"{os.path.basename(hidden)}::{i}" for i in ids]
    tripwire = ast.parse(open(trip).read()).body[0].name
    trip_id = f"{os.path.basename(trip)}::{tripwire}"
    frame_out = {
        "reports": {**{i: "passed" for i in ids}, trip_id: "failed"},
        "raised": {**{i: False for i in ids}, trip_id: True},
        "returned": {i: True for i in ids},
        "collect_errors": 0, "exit": 0,
    }
    out.write(f"RLV-RESULT {nonce} {json.dumps(frame_out)}\\n")
    out.flush()
    os._exit(0)
"""

ATTACKS: dict[str, dict[str, str]] = {
    "import_hook_rewrites_asserts": attack(IMPORT_HOOK),
    "gc_finds_the_reporter": attack(GC_REPORTER),
    "frames_give_the_nonce_for_a_forged_result": attack(FORGED_RESULT_LINE),
    "os_exit_at_import": attack("import os\nos._exit(0)\n"),
    "sys_exit_at_import": attack("import sys\nsys.exit(0)\n"),
    "pytest_skip_module": attack("import pytest\npytest.skip('no', allow_module_level=True)\n"),
    "unittest_skiptest": attack("import unittest\nraise unittest.SkipTest('no')\n"),
    "skip_in_call": attack(
        "",
        body={
            m: f"def {m}(*a):\n    import pytest\n    pytest.skip('no')\n" if m != S else RIGHT[S]
            for m in (H, P, S)
        },
    ),
    "xfail_in_call": attack(
        "",
        body={
            m: f"def {m}(*a):\n    import pytest\n    pytest.xfail('no')\n" if m != S else RIGHT[S]
            for m in (H, P, S)
        },
    ),
    "always_equal": attack(
        ALWAYS_EQUAL,
        body={
            H: "def largest(*a):\n    return Eq()\n",
            P: "def add(*a):\n    return Eq()\n",
            S: RIGHT[S],
        },
    ),
    "int_subclass": attack(
        INT_SUB,
        body={
            H: "def largest(*a):\n    return I(0)\n",
            P: "def add(*a):\n    return I(0)\n",
            S: RIGHT[S],
        },
    ),
    "str_subclass": attack(
        STR_SUB,
        body={
            H: "def largest(*a):\n    return Str('')\n",
            P: "def add(*a):\n    return Str('')\n",
            S: RIGHT[S],
        },
    ),
    "patch_test_report": attack(PATCH_REPORT),
    "patch_runtest_name_aware": attack(PATCH_NAME_AWARE),
    "register_makereport_hook": attack(PATCH_HOOK),
    "write_conftest_ini_sitecustomize_pth": attack(WRITE_CONFIG),
    "read_and_glob_hidden_tests": attack(READ_TESTS, READ_TESTS_CHEAT),
    "forge_reports_and_fake_passed_lines": attack(FORGE_OUTPUT),
    "infinite_loop": attack(INFINITE, "def cheat():\n    spin()\n"),
    "sleep_past_deadline": attack("import time\n", "def cheat():\n    time.sleep(60)\n"),
    "fork_bomb": attack(FORK_BOMB),
    "memory_bomb": attack(MEMORY_BOMB),
    "huge_stdout": attack(HUGE_STDOUT),
    "network_access": attack(NETWORK, NETWORK_CHEAT),
    "read_tinker_api_key": attack("", SECRET_CHEAT),
    "kill_parent": attack(KILL_PARENT),
    "write_host_files": attack(ESCAPE),
}

SAME_INTERPRETER = (
    "import_hook_rewrites_asserts",
    "gc_finds_the_reporter",
    "frames_give_the_nonce_for_a_forged_result",
)
P1 = "add-single-process"
# Single-process limits (README, "What this mode cannot stop"): the tests are readable there,
# and the same-interpreter attacks pass (test_same_interpreter_attacks_pass_...).
SKIP = {("read_and_glob_hidden_tests", P1), *((name, P1) for name in SAME_INTERPRETER)}


@pytest.fixture(autouse=True)
def host_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINKER_API_KEY", "tml-secret-do-not-leak")


CASES = [
    pytest.param(name, mode, id=f"{name}-{mode}")
    for name in ATTACKS
    for mode in (H, P, P1, S)
    if (name, mode) not in SKIP
]


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_attack_scores_zero(
    name: str,
    mode: str,
    fast: PytestVerifier,
    fast_single: PytestVerifier,
    tasks: dict[str, Task],
) -> None:
    verifier = fast_single if mode == P1 else fast
    code = ATTACKS[name][P if mode == P1 else mode]
    result = score(verifier, tasks[TASK_IDS[P if mode == P1 else mode]], code)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)
    assert not any(path.exists() for path in HOST_FILES)
    assert os.environ["TINKER_API_KEY"] == "tml-secret-do-not-leak"


@pytest.mark.parametrize("mode", [H, P, S])
def test_honest_solution_passes_with_the_same_harness(
    mode: str, fast: PytestVerifier, tasks: dict[str, Task]
) -> None:
    code = "def cheat():\n    return True\n" + RIGHT[mode]
    result = score(fast, tasks[TASK_IDS[mode]], code)
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)


NEVER_READS = "import time\ntime.sleep(10**6)\n"
SHRINKS_PIPE = """
import fcntl, time
for fd in range(3, 64):
    try:
        fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ: one page
    except OSError:
        pass
time.sleep(10**6)
"""


@pytest.mark.parametrize(
    ("prelude", "size"), [(NEVER_READS, 30_000), (SHRINKS_PIPE, 2_000)], ids=["sleeps", "shrinks"]
)
def test_a_solution_that_never_reads_its_requests_fails_at_its_own_deadline(
    fast: PytestVerifier, prelude: str, size: int
) -> None:
    """A request larger than the pipe buffer used to block the host's write with no deadline:
    the sample came back ``timeout`` after the whole ``timeout_s``. It is the solution's
    failure at its own wall limit: ok, 0, ``limit`` wall."""
    test = f"def check(candidate):\n    assert candidate(list(range({size}))) == {size - 1}\n"
    task = Task(
        id="big-argument",
        prompt="largest",
        verifier="pytest",
        reference={"test": test, "entry_point": "largest"},
    )
    code = prelude + "def largest(numbers):\n    return max(numbers)\n"
    result = score(fast, task, code, timeout_s=15.0)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)
    assert result.info["timed_out"] and result.info["limit"] == "wall"
    honest = score(fast, task, "def largest(numbers):\n    return max(numbers)\n")
    assert (honest.status, honest.reward) == (Status.OK, 1.0), (honest.info, honest.error)


@pytest.mark.parametrize("name", SAME_INTERPRETER)
def test_same_interpreter_attacks_pass_the_opt_in_single_process_mode(
    name: str, verifier: PytestVerifier, tasks: dict[str, Task]
) -> None:
    """Why the default moved: each attack above scores 1 where the solution shares pytest's
    interpreter, and that mode's info says so."""
    result = score(verifier, tasks[TASK_IDS[P]], ATTACKS[name][P], pytest_mode="single-process")
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)
    assert result.info["mode"] == "hardened" and "gc" in result.info["cannot_stop"]


RAISES_TESTS = """
import pytest
import solution
from solution import parse


def test_value():
    assert parse("12") == 12 and solution.parse("-3") == -3


def test_bad_input_raises():
    with pytest.raises(ValueError, match="not a number"):
        parse("x")


@pytest.mark.parametrize("text", ["1", "22"])
def test_many(text):
    assert parse(text) == int(text)
"""


def test_pytest_file_through_the_proxy(fast: PytestVerifier) -> None:
    """The default mode keeps what pytest files rely on: ``import solution`` and ``from
    solution import``, parametrize, and ``pytest.raises`` of a builtin exception."""
    task = Task(id="parse", prompt="parse", verifier="pytest", reference={"tests": RAISES_TESTS})
    right = (
        "def parse(text):\n    if not text.lstrip('-').isdigit():\n"
        "        raise ValueError('not a number')\n    return int(text)\n"
    )
    result = score(fast, task, right)
    assert (result.status, result.reward) == (Status.OK, 1.0), (result.info, result.error)
    assert result.info["mode"] == "two-process" and result.info["tests"] == 4
    wrong = score(fast, task, right.replace("ValueError", "KeyError"), reward="fraction")
    assert (wrong.status, wrong.reward) == (Status.OK, 0.75), (wrong.info, wrong.error)


@pytest.mark.parametrize("mode", [H, P, P1, S])
def test_a_run_limit_past_the_sample_deadline_is_still_the_programs_failure(
    mode: str, verifier: PytestVerifier, tasks: dict[str, Task]
) -> None:
    """``run_timeout_s`` above ``timeout_s``: an endless program used to outlast the sample
    (status ``timeout``, dropped by training) in the stdin/stdout and single-process modes.
    Each run now ends within the sample's own deadline, as the program's failure."""
    extra = {"pytest_mode": "single-process"} if mode == P1 else {}
    code = ATTACKS["infinite_loop"][P if mode == P1 else mode]
    task = tasks[TASK_IDS[P if mode == P1 else mode]]
    result = score(verifier, task, code, run_timeout_s=60.0, timeout_s=10.0, **extra)
    assert (result.status, result.reward) == (Status.OK, 0.0), (result.info, result.error)
    assert result.info["limit"] in ("wall", "cpu"), result.info


DEEP = "x = " + "1+" * 200_000 + "1\n"  # the host's parser recurses once per "+"


def test_model_controlled_host_costs_stay_the_models(
    verifier: PytestVerifier, tasks: dict[str, Task]
) -> None:
    """What the host itself does with the completion before any sandbox runs. Before:
    200,000 unclosed fences made the fence regex run for hours (status ``timeout``), and a
    200,000-term sum raised RecursionError out of the verifier (status ``error``)."""
    right = RIGHT[H].replace("cheat()", "True")
    fences = "```x\n" * 200_000 + f"````python\n{right}````\n"  # no 3-backtick closing
    [many] = score_once(verifier, [(tasks[TASK_IDS[H]], fences)])
    assert (many.status, many.reward) == (Status.OK, 1.0), (many.info, many.error)
    deep = score(verifier, tasks[TASK_IDS[H]], DEEP)  # HumanEval: is the entry point defined?
    assert (deep.status, deep.reward) == (Status.OK, 0.0), (deep.info, deep.error)
    unfenced = PytestVerifier({**verifier.config.model_dump(), "allow_unfenced": True})
    [bare] = score_once(unfenced, [(tasks[TASK_IDS[H]], DEEP)])
    assert bare.status is Status.INVALID, (bare.info, bare.error)


def test_sandbox_still_works_after_bombs(fast: PytestVerifier, tasks: dict[str, Task]) -> None:
    for name in ("fork_bomb", "memory_bomb"):
        score(fast, tasks[TASK_IDS[H]], ATTACKS[name][H])
    code = "def cheat():\n    return True\n" + RIGHT[H]
    # a roomy deadline: this asks whether the sandbox works, not how fast it starts on cores
    # that the bombs' teardown (or another job) keeps busy
    after = score(fast, tasks[TASK_IDS[H]], code, timeout_s=60.0)
    assert (after.status, after.reward) == (Status.OK, 1.0), (after.info, after.error)
