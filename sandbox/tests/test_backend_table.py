"""Adding a sandbox backend is one module and one table entry.

This test module is such a module: ``ToySandbox`` and its opener below are a whole (toy,
non-isolating) backend. Registered in the table under ``toy``, it is reached through
``get_sandbox``, listed and probed by the doctor, and accepted by the plugins' backend
settings, none of which name it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from rl_verifier import Completion, Status, Task
from rl_verifier_sandbox import (
    BACKENDS,
    Backend,
    Job,
    Options,
    Result,
    Sandbox,
    backend_names,
    get_sandbox,
)
from rl_verifier_sandbox import doctor as sandbox_doctor


class ToySandbox(Sandbox):
    """Runs each job as a plain child process in a fresh temporary directory."""

    name = "toy"
    isolates = False

    def run(self, job: Job) -> Result:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="rlv-toy-") as work:
            for name, data in job.files.items():
                path = Path(work, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data.encode() if isinstance(data, str) else data)
            argv = [sys.executable if job.argv[0] == "python" else job.argv[0], *job.argv[1:]]
            env = {"PATH": os.environ["PATH"], **job.policy.env}
            done = subprocess.run(
                argv, input=job.stdin, capture_output=True, cwd=work, env=env, check=False
            )
        return Result(
            exit_code=done.returncode if done.returncode >= 0 else None,
            signal=-done.returncode if done.returncode < 0 else None,
            stdout=done.stdout[: job.limits.stdout_bytes],
            stderr=done.stderr[: job.limits.stderr_bytes],
            stdout_truncated=len(done.stdout) > job.limits.stdout_bytes,
            stderr_truncated=len(done.stderr) > job.limits.stderr_bytes,
            timed_out=False,
            limit_hit=None,
            wall_s=time.monotonic() - start,
            cpu_s=0.0,
        )


def open_sandbox(options: Options) -> ToySandbox:
    return ToySandbox()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Backend:
    """The one table entry."""
    entry = Backend("toy", f"{__name__}:open_sandbox")
    monkeypatch.setitem(BACKENDS, entry.name, entry)
    return entry


def test_get_sandbox_opens_a_registered_backend(toy: Backend) -> None:
    sandbox = get_sandbox("toy")
    assert isinstance(sandbox, ToySandbox)
    res = sandbox.run(Job(argv=("python", "main.py"), files={"main.py": "print(6 * 7)"}))
    assert (res.exit_code, res.stdout) == (0, b"42\n")
    assert "toy" in backend_names()
    assert "toy" not in backend_names(processes=True)  # it holds no live processes


def test_an_unregistered_backend_is_refused() -> None:
    from rl_verifier_sandbox import SandboxUnavailable

    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend 'toy'"):
        get_sandbox("toy")


def test_the_doctor_lists_and_probes_a_registered_backend(
    toy: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # only the harmless probe: a toy backend has no process limit to stop a fork bomb
    files_probe = [p for p in sandbox_doctor.PROBES if p[0].__name__ == "_probe_job"]
    monkeypatch.setattr(sandbox_doctor, "PROBES", files_probe)
    report = sandbox_doctor.run_doctor("toy")
    assert report["backends"]["toy"] == {
        "works": True,
        "isolates": False,
        "detail": report["backends"]["toy"]["detail"],
    }
    assert report["backends"]["toy"]["detail"].startswith("works")
    assert set(report["backends"]) == set(BACKENDS)
    assert [(c["name"], c["ok"]) for c in report["checks"]] == [("files_and_stdin", True)]


def test_the_pytest_verifier_accepts_and_uses_a_registered_backend(toy: Backend) -> None:
    pytest_plugin = pytest.importorskip("rl_verifier_pytest")
    schema = pytest_plugin.PytestVerifier.Config.model_json_schema()
    assert "toy" in schema["properties"]["backend"]["enum"]
    verifier = pytest_plugin.PytestVerifier({"backend": "toy"})
    assert isinstance(verifier.sandbox(), ToySandbox)
    task = Task(id="t", prompt="p", reference={"cases": [{"input": "3\n", "output": "9"}]})
    code = "```python\nprint(int(input()) ** 2)\n```"
    verdict = verifier.verify(task, Completion(task_id="t", completion=code))
    assert (verdict.status, verdict.reward) == (Status.OK, 1.0), verdict


def test_plugin_settings_refuse_a_backend_not_in_the_table() -> None:
    pytest_plugin = pytest.importorskip("rl_verifier_pytest")
    with pytest.raises(ValidationError, match="unknown sandbox backend 'toy'"):
        pytest_plugin.PytestVerifier.Config(backend="toy")


def test_lean_takes_only_backends_that_hold_asyncio_processes(
    toy: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    lean_config = pytest.importorskip("rl_verifier_lean.config")
    with pytest.raises(ValidationError, match="unknown sandbox backend 'toy'"):
        lean_config.LeanConfig(sandbox="toy")  # a REPL needs Sandbox.open_async_process
    monkeypatch.setitem(BACKENDS, "toy", Backend("toy", toy.opener, async_processes=True))
    assert lean_config.LeanConfig(sandbox="toy").sandbox == "toy"
