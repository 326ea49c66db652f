"""The default Linux backend: bubblewrap, run as a dedicated unprivileged uid."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rl_verifier_sandbox.api import (
    SERVER_TMP_BYTES,
    WARM_PYTEST,
    BadJob,
    Job,
    Policy,
    Result,
    Sandbox,
    SandboxUnavailable,
)
from rl_verifier_sandbox.backends import Options
from rl_verifier_sandbox.bwrap import live, pyenv
from rl_verifier_sandbox.bwrap.forkserver import PythonPool
from rl_verifier_sandbox.bwrap.lease import Lease
from rl_verifier_sandbox.jobs import hostpaths
from rl_verifier_sandbox.jobs.env import BASE_ENV, rlimit_args
from rl_verifier_sandbox.jobs.files import as_bytes, parent_dirs, safe_relpath
from rl_verifier_sandbox.jobs.host_process import run_capped
from rl_verifier_sandbox.jobs.result import bad_job_result
from rl_verifier_sandbox.linux import seccomp
from rl_verifier_sandbox.linux.cgroups import CgroupHost, CgroupUsage, JobCgroup, host_cgroups
from rl_verifier_sandbox.linux.slots import UidSlots

WORK_DIR = "/job"
RO_SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives")
# pid 1 in the job's pid namespace: waits for the job (so its CPU time is accounted), reports
# a signal death as 128+N, and when it exits the kernel kills every other process in the namespace.
INIT = ("/bin/sh", "-c", '"$@"; exit $?', "sh")
# Read empty inside: the host's kernel command line (on a VM, the hypervisor's vsock ports).
HIDDEN_PROC = ("/proc/cmdline",)
# No PTYs: bwrap's /dev brings a devpts instance of its own, but every instance shares the
# kernel's pty limit (one job took all 3,071 and a concurrent job's /dev/ptmx failed). An empty
# read-only tmpfs over /dev/pts hides it (/dev/ptmx points into it).
NO_PTYS = ("--size", "4096", "--tmpfs", "/dev/pts", "--remount-ro", "/dev/pts")


def open_sandbox(options: Options) -> BwrapSandbox:
    """The backend table's opener: a checked bwrap sandbox (``options.uid_slots``: how many
    uids, so concurrent jobs and processes, it may hold)."""
    slots = UidSlots(count=options.uid_slots) if options.uid_slots else None
    sandbox = BwrapSandbox(slots=slots)
    sandbox.check()
    return sandbox


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    _write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in RO_SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


class BwrapSandbox(Sandbox):
    """bubblewrap with every namespace unshared, no network and a tmpfs work dir per job.

    ``cgroups``: each job gets its own cgroup where the host allows it (see ``cgroups``), else
    rlimits. ``seccomp``: the syscall filter of ``seccomp`` (on by default; when libseccomp is
    missing, ``check`` raises SandboxUnavailable rather than running jobs unfiltered).
    """

    name = "bwrap"
    isolates = True

    def __init__(
        self,
        *,
        python: pyenv.PythonEnv | None = None,
        slots: UidSlots | None = None,
        bwrap: str = "bwrap",
        cgroups: bool = True,
        seccomp: bool = True,
    ) -> None:
        self._python = python
        self.slots = slots or UidSlots()
        self._bwrap = shutil.which(bwrap) or bwrap
        self._root = os.geteuid() == 0
        self._cgroups = cgroups
        self.seccomp = seccomp

    @property
    def cgroup_host(self) -> CgroupHost | None:
        """How job cgroups are made here, or None when jobs get rlimits only."""
        return host_cgroups() if self._cgroups else None

    def mechanisms(self) -> dict[str, str]:
        """What enforces each limit here: cgroup-v1/cgroup-v2, rlimit, seccomp, namespace,
        host (the trusted parent process), or none."""
        host = self.cgroup_host
        cg = host.mechanism if host else ""
        accounts_cpu = host is not None and (host.version == "v2" or host.has("cpuacct"))
        return {
            "memory": cg if host and host.has("memory") else "rlimit",
            "processes": cg if host and host.has("pids") else ("rlimit" if self._root else "none"),
            "cpu": cg if accounts_cpu else "rlimit",
            "file_size": "rlimit",
            "open_files": "rlimit",
            "output": "host",
            "wall": "host",
            "environment": "host",
            "uid": "namespace",
            "network": "namespace",
            "filesystem": "namespace",
            "syscalls": "seccomp" if self.seccomp else "none",
            "cleanup": "namespace",
        }

    @property
    def python(self) -> pyenv.PythonEnv:
        if self._python is None:
            self._python = pyenv.system_python()
        return self._python

    @property
    def python_executable(self) -> str:
        return self.python.executable

    def check(self) -> None:
        """Raise SandboxUnavailable with the reason if a trivial job cannot run."""
        if self.seccomp:
            seccomp.bpf_program()  # SeccompUnavailable says what to install
        _probe(self._bwrap, self._root, self.seccomp)

    def lease(self, job: Job) -> Lease:
        """Hold a uid slot and (where the host allows) a cgroup for one process tree, such as
        a long-lived REPL: see ``rl_verifier_sandbox.bwrap.lease``."""
        return Lease(self, job)

    def open_process(self, job: Job) -> live.LeasedProcess:
        return live.start(self.lease(job))

    async def open_async_process(
        self, job: Job, *, read_limit: int = 1 << 16
    ) -> live.AsyncLeasedProcess:
        lease = await asyncio.to_thread(self.lease, job)  # blocks until a uid slot is free
        return await live.start_async(lease, read_limit=read_limit)

    @contextmanager
    def command(
        self,
        job: Job,
        uid: int,
        *,
        extra_binds: tuple[tuple[str, str], ...] = (),
        cgroup: JobCgroup | None = None,
    ) -> Iterator[tuple[list[str], list[int]]]:
        """The full host argv for ``job`` as ``uid`` and the fds it needs passed in. With
        ``cgroup`` the process joins it first, and the cgroup (not RLIMIT_AS / RLIMIT_NPROC)
        bounds memory and processes."""
        fds: list[int] = []
        try:
            argv = cgroup.enter_argv() if cgroup else []
            memory_cg = cgroup is not None and cgroup.host.has("memory")
            pids_cg = cgroup is not None and cgroup.host.has("pids")
            argv += rlimit_args(
                job.limits, nproc=self._root and not pids_cg, address_space=not memory_cg
            )
            stage, host_binds = hostpaths.binds(job.policy.readonly_paths, root=self._root)
            argv += stage
            if self._root:
                argv += [
                    "setpriv",
                    f"--reuid={uid}",
                    f"--regid={uid}",
                    "--clear-groups",
                    "--inh-caps=-all",
                ]
            argv += self._bwrap_args(job, uid, fds, extra_binds, host_binds)
            yield argv, fds
        finally:
            for fd in fds:
                os.close(fd)

    def _bwrap_args(
        self,
        job: Job,
        uid: int,
        fds: list[int],
        extra_binds: tuple[tuple[str, str], ...],
        host_binds: list[str],
    ) -> list[str]:
        lim, pol = job.limits, job.policy
        args = [
            self._bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--clearenv",
        ]
        for key, value in self._env(pol).items():
            args += ["--setenv", key, value]
        if self.seccomp:
            fds.append(seccomp.memfd())
            args += ["--seccomp", str(fds[-1])]
        args += _system_binds()
        args += ["--proc", "/proc"]
        for path in HIDDEN_PROC:
            fds.append(_memfd("hidden", b""))
            args += ["--ro-bind-data", str(fds[-1]), path]
        args += ["--dev", "/dev", "--mqueue", "/dev/mqueue"]
        args += ["--size", str(lim.tmp_bytes), "--tmpfs", "/dev/shm"]
        args += NO_PTYS
        args += ["--remount-ro", "/dev"]
        args += ["--size", str(lim.tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--perms", "0700", "--size", str(lim.tmp_bytes), "--tmpfs", WORK_DIR]
        passwd = f"sandbox:x:{uid}:{uid}:sandbox:/tmp:/bin/sh\n".encode()
        fds.append(_memfd("passwd", passwd))
        args += ["--ro-bind-data", str(fds[-1]), "/etc/passwd"]
        if pol.python:
            py = self.python
            args += ["--ro-bind", py.site_dir, pyenv.SITE_MOUNT]
            if py.host_prefix:
                args += ["--ro-bind", py.host_prefix, pyenv.PREFIX_MOUNT]
        for src, dst in extra_binds:
            args += ["--ro-bind", src, dst]
        args += host_binds
        for path, data in pol.readonly_files.items():
            if not path.startswith("/"):
                raise BadJob(f"readonly file path must be absolute: {path!r}")
            fds.append(_memfd("ro", as_bytes(data)))
            args += ["--ro-bind-data", str(fds[-1]), path]
        files = {safe_relpath(k): as_bytes(v) for k, v in job.files.items()}
        for d in parent_dirs(files):
            args += ["--dir", f"{WORK_DIR}/{d}"]
        for name, data in files.items():
            fds.append(_memfd("file", data))
            args += ["--file", str(fds[-1]), f"{WORK_DIR}/{name}"]
        args += ["--remount-ro", "/"]  # after every mount point on it has been made
        args += ["--chdir", WORK_DIR, "--", *INIT, *self._target_argv(job)]
        return args

    def _env(self, pol: Policy) -> dict[str, str]:
        env = dict(BASE_ENV)
        if pol.python:
            env["PYTHONPATH"] = pyenv.SITE_MOUNT
        env.update(pol.env)
        return env

    def _target_argv(self, job: Job) -> list[str]:
        if not job.argv:
            raise BadJob("empty argv")
        if job.argv[0] == "python":
            return [self.python.executable, *job.argv[1:]]
        return list(job.argv)

    def run(self, job: Job) -> Result:
        try:
            with self.lease(job) as lease:
                cg = lease.cgroup
                with lease.command() as (argv, fds):
                    out = run_capped(
                        argv,
                        job.limits,
                        stdin=job.stdin,
                        env={},
                        pass_fds=fds,
                        cpu_used=cg.cpu_s if cg is not None and cg.accounts_cpu else None,
                    )
                usage = lease.release()
        except BadJob as exc:
            return bad_job_result(str(exc))
        if usage is None:
            return out.result(job.limits, shell_style=True)
        return out.result(job.limits, shell_style=True, **cgroup_verdict(usage))

    def python_pool(
        self,
        size: int = 1,
        tmp_bytes: int = SERVER_TMP_BYTES,
        *,
        max_size: int | None = None,
        readonly_files: Mapping[str, str | bytes] | None = None,
        warm: tuple[str, ...] = WARM_PYTEST,
    ) -> PythonPool:
        """A warm fork-server pool for Python jobs (same ``run(Job) -> Result`` and
        ``open_process``; see ``PythonPool``)."""
        return PythonPool(
            self,
            size=size,
            tmp_bytes=tmp_bytes,
            max_size=max_size,
            readonly_files=readonly_files,
            warm=warm,
        )


def cgroup_verdict(usage: CgroupUsage) -> dict[str, Any]:
    """What a job cgroup adds to a result: total CPU, and which of its limits was hit."""
    return {
        "cpu_s": usage.cpu_s,
        "cgroup_hit": "memory" if usage.oom_kills else None,
        "pids_refused": usage.pids_refused > 0,
    }


@functools.cache
def _probe(bwrap: str, root: bool, with_seccomp: bool) -> None:
    if not os.path.exists(bwrap) and shutil.which(bwrap) is None:
        raise SandboxUnavailable(f"bubblewrap not found ({bwrap})")
    for tool in ("prlimit", "setpriv") if root else ("prlimit",):
        if shutil.which(tool) is None:
            raise SandboxUnavailable(f"{tool} (util-linux) not found")
    python = pyenv.PythonEnv(None, "/usr/bin/python3", "/nonexistent")
    sb = BwrapSandbox(python=python, bwrap=bwrap, seccomp=with_seccomp)
    try:
        res = sb.run(Job(argv=("/bin/true",), policy=Policy(python=False)))
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"bubblewrap failed to start: {exc}") from exc
    if res.exit_code != 0:
        msg = res.stderr.decode(errors="replace").strip()
        raise SandboxUnavailable(f"bubblewrap cannot create namespaces here: {msg}")
