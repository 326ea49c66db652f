"""Docker backend (Docker SDK, imported lazily) with the same policy as bwrap, plus a warm pool.

The container configuration is a pure function (``container_config``) so it can be tested
without an engine. Jobs run via ``exec`` in warm, locked-down containers; files travel in a
tar archive into the tmpfs work dir, which is wiped (with ``/tmp``) after every job.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import queue
import shlex
import tarfile
import time
from typing import Any

from rl_verifier_sandbox._files import BadJob, as_bytes, safe_relpath
from rl_verifier_sandbox.api import Job, Limits, Result, Sandbox, SandboxUnavailable
from rl_verifier_sandbox.bwrap import BASE_ENV, bad_job_result

DEFAULT_IMAGE = "python:3.11-slim"
WORK_DIR = "/job"
UID = 65534


def container_config(
    image: str, limits: Limits, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Keyword arguments for ``docker.containers.run`` enforcing the sandbox policy."""
    tmp = f"rw,nosuid,nodev,size={limits.tmp_bytes},uid={UID},gid={UID},mode=0700"
    return {
        "image": image,
        "command": ["sleep", "infinity"],
        "detach": True,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": tmp, WORK_DIR: tmp},
        "working_dir": WORK_DIR,
        "user": f"{UID}:{UID}",
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,
        "pids_limit": limits.processes,
        "nano_cpus": 1_000_000_000,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "ulimits": _ulimits(limits),
        "environment": {**BASE_ENV, **(env or {})},
        "auto_remove": True,
        "labels": {"rl-verifier-sandbox": "1"},
    }


def _ulimits(limits: Limits) -> list[dict[str, Any]]:
    cpu = max(1, int(limits.cpu_s + 0.999))
    pairs = {
        "cpu": (cpu, cpu + 1),
        "fsize": (limits.file_bytes, limits.file_bytes),
        "nofile": (limits.open_files, limits.open_files),
        "core": (0, 0),
    }
    return [{"name": k, "soft": s, "hard": h} for k, (s, h) in pairs.items()]


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.uid, info.gid, info.mode = len(data), UID, UID, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class DockerSandbox(Sandbox):
    """Warm pool of locked-down containers; one job at a time per container."""

    name = "docker"
    isolates = True

    def __init__(
        self, image: str = DEFAULT_IMAGE, size: int = 1, limits: Limits | None = None
    ) -> None:
        try:
            docker: Any = importlib.import_module("docker")
        except ImportError as exc:
            msg = "the 'docker' package is not installed (extra: docker)"
            raise SandboxUnavailable(msg) from exc
        try:
            self._client: Any = docker.from_env()
            self._client.ping()
        except Exception as exc:
            raise SandboxUnavailable(f"no Docker engine reachable: {exc}") from exc
        self._image, self._limits = image, limits or Limits()
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._all = [self._start() for _ in range(size)]
        for c in self._all:
            self._free.put(c)

    def _start(self) -> Any:
        return self._client.containers.run(**container_config(self._image, self._limits))

    def run(self, job: Job) -> Result:
        if job.policy.readonly_paths:
            return bad_job_result("the docker backend cannot show host paths (readonly_paths)")
        try:
            files = {safe_relpath(k): as_bytes(v) for k, v in job.files.items()}
        except BadJob as exc:
            return bad_job_result(str(exc))
        container = self._free.get()
        try:
            return self._exec(container, job, files)
        finally:
            container.exec_run(["sh", "-c", "rm -rf /job/* /job/.[!.]* /tmp/* 2>/dev/null"])
            self._free.put(container)

    def _exec(self, container: Any, job: Job, files: dict[str, bytes]) -> Result:
        container.put_archive(WORK_DIR, _tar(files))
        argv = list(job.argv)
        if argv and argv[0] == "python":
            argv[0] = "python3"
        cmd = f"timeout -s KILL {job.limits.wall_s} {shlex.join(argv)}"
        start = time.monotonic()
        res = container.exec_run(["sh", "-c", cmd], environment=dict(job.policy.env), demux=True)
        wall = time.monotonic() - start
        out, err = res.output if isinstance(res.output, tuple) else (res.output, b"")
        out, err = out or b"", err or b""
        lim = job.limits
        code = res.exit_code
        timed_out = code == 137 and wall >= lim.wall_s * 0.95
        return Result(
            exit_code=None if code is not None and code > 128 else code,
            signal=code - 128 if code is not None and code > 128 else None,
            stdout=out[: lim.stdout_bytes],
            stderr=err[: lim.stderr_bytes],
            stdout_truncated=len(out) > lim.stdout_bytes,
            stderr_truncated=len(err) > lim.stderr_bytes,
            timed_out=timed_out,
            limit_hit="output" if len(out) > lim.stdout_bytes else None,
            wall_s=wall,
            cpu_s=0.0,
        )

    def close(self) -> None:
        for c in self._all:
            with contextlib.suppress(Exception):  # best effort cleanup
                c.kill()
        self._all = []
