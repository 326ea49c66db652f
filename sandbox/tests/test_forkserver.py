"""The warm Python fork server: isolation between jobs, speed, recovery."""

from __future__ import annotations

from rl_verifier_sandbox.api import Job, Limits
from rl_verifier_sandbox.bwrap import BwrapSandbox
from rl_verifier_sandbox.forkserver import PythonPool

PYTEST = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
TESTS = {"test_a.py": "def test_ok():\n    assert 1 + 1 == 2\n\ndef test_bad():\n    assert 0\n"}


def py(code: str, **limits: float) -> Job:
    return Job(argv=("python", "-c", code), limits=Limits(**limits))  # type: ignore[arg-type]


def test_job2_cannot_see_job1(pool: PythonPool) -> None:
    code1 = (
        "import os; open('secret', 'w').write('1'); open('/tmp/s', 'w').write('1'); os.mkdir('d')"
    )
    assert pool.run(py(code1)).exit_code == 0
    code2 = "import os; print(os.listdir('.'), os.listdir('/tmp'), os.listdir('/dev/shm'))"
    assert pool.run(py(code2)).stdout == b"[] [] []\n"


def test_pytest_job_result(pool: PythonPool) -> None:
    r = pool.run(Job(argv=PYTEST, files=TESTS))
    assert r.exit_code == 1 and b"1 failed, 1 passed" in r.stdout


def test_warm_pytest_job_gives_the_same_result_as_cold(pool: PythonPool, sb: BwrapSandbox) -> None:
    # Speed lives in benchmarks/bench_pytest_job.py; here the two paths must agree.
    job = Job(argv=PYTEST, files=TESTS)
    warm, cold = pool.run(job), sb.run(job)
    assert warm.exit_code == cold.exit_code == 1


def test_server_recovers_after_being_killed(pool: PythonPool) -> None:
    pool.run(py("import os; os.kill(os.getppid(), 9)"))
    assert pool.run(py("print('again')")).stdout == b"again\n"


def test_non_python_job_falls_back_to_cold_path(pool: PythonPool) -> None:
    r = pool.run(Job(argv=("sh", "-c", "echo hi")))
    assert r.stdout == b"hi\n"


def test_script_and_module_entries(pool: PythonPool) -> None:
    files = {"m.py": "import sys; print('mod', sys.argv[1:])", "s.py": "import m"}
    assert pool.run(Job(argv=("python", "-m", "m", "x"), files=files)).stdout == b"mod ['x']\n"
    assert pool.run(Job(argv=("python", "s.py"), files=files)).stdout == b"mod []\n"
