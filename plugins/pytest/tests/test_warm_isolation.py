"""Warm servers fork every sample's processes: a sample leaves nothing for the next one."""

from __future__ import annotations

import pytest

from rl_verifier import Status, Task
from rl_verifier.testing import score_once
from rl_verifier_pytest import PytestVerifier

pytestmark = pytest.mark.requires("bwrap")

CHECK = "def check(candidate):\n    assert candidate(2) == 4\n"
TASKS = [
    Task(id=f"double-{n}", prompt="", reference={"test": CHECK, "entry_point": "double"})
    for n in range(2)
]
# Leaves every trace it can in its sandbox, then answers correctly.
POLLUTE = """
import builtins, os, subprocess, sys, threading, time
open('left', 'w').write('1'); open('/tmp/left', 'w').write('1'); open('/dev/shm/left', 'w')
os.environ['PROBE_LEFT_BEHIND'] = '1'
sys.modules['json'] = None
threading.Thread(target=time.sleep, args=(60,), daemon=False).start()
subprocess.Popen(['sleep', '60'], start_new_session=True)
builtins.PROBE_LEFT_BEHIND = True

def double(x):
    return 2 * x
"""
# Right only where no trace of an earlier sample is found.
PROBE = """
import builtins, glob, os, sys

def double(x):
    traces = glob.glob('/job/*') + glob.glob('/tmp/*') + glob.glob('/dev/shm/*')
    mine = (1, os.getppid(), os.getpid())
    others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in mine]
    left = traces != ['/job/solution.py'] or others or 'PROBE_LEFT_BEHIND' in os.environ
    left = left or sys.modules.get('json', 0) is None or hasattr(builtins, 'PROBE_LEFT_BEHIND')
    return 0 if left else 2 * x
"""


def test_a_sample_leaves_nothing_for_the_next() -> None:
    """One sample at a time on two warm servers, which swap the test and solution roles: the
    probes after the polluters run on both servers, for the same task and another."""
    verifier = PytestVerifier({"backend": "bwrap", "max_concurrency": 1, "run_timeout_s": 5.0})
    pairs = [(TASKS[0], f"```python\n{POLLUTE}```")] * 2
    pairs += [(task, f"```python\n{PROBE}```") for task in TASKS for _ in range(2)]
    scores = score_once(verifier, pairs)
    assert [(s.status, s.reward) for s in scores] == [(Status.OK, 1.0)] * 6
