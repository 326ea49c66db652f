"""The non-isolating backend: rlimits, a wall deadline and killpg only. Trusted code only."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile

from rl_verifier_sandbox.api import BadJob, Job, Result, Sandbox
from rl_verifier_sandbox.backends import Options
from rl_verifier_sandbox.jobs.env import BASE_ENV, rlimit_args
from rl_verifier_sandbox.jobs.files import as_bytes, safe_relpath
from rl_verifier_sandbox.jobs.host_process import run_capped
from rl_verifier_sandbox.jobs.result import bad_job_result

log = logging.getLogger(__name__)
WARNING = (
    "rl-verifier sandbox backend 'process' DOES NOT ISOLATE: jobs run as this user with full "
    "access to the filesystem, network and environment. Use it for trusted code only."
)


def open_sandbox(options: Options) -> ProcessSandbox:
    """The backend table's opener (no options apply)."""
    return ProcessSandbox()


class ProcessSandbox(Sandbox):
    """Runs the job as a plain child process in a temp dir (no namespaces)."""

    name = "process"
    isolates = False

    def __init__(self) -> None:
        log.warning(WARNING)

    @property
    def python_executable(self) -> str:
        return sys.executable

    def mechanisms(self) -> dict[str, str]:
        """Only the cleanup is named: the host kills the job's process group."""
        return {"cleanup": "host"}

    def run(self, job: Job) -> Result:
        if not job.argv:
            return bad_job_result("empty argv")
        work = tempfile.mkdtemp(prefix="rlv-job-")
        try:
            try:
                for name, data in job.files.items():
                    path = os.path.join(work, safe_relpath(name))
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as fh:
                        fh.write(as_bytes(data))
            except BadJob as exc:
                return bad_job_result(str(exc))
            argv = list(job.argv)
            if argv[0] == "python":
                argv[0] = sys.executable
            env = {**BASE_ENV, "HOME": work, **job.policy.env}
            out = run_capped(
                rlimit_args(job.limits, nproc=False) + argv,
                job.limits,
                stdin=job.stdin,
                env=env,
                cwd=work,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return out.result(job.limits, shell_style=False)
