"""What one sandboxed process tree holds while it lives: a uid slot and its own cgroup.

``BwrapSandbox.run`` takes a lease per job, and ``live`` one per long-lived process
(``Sandbox.open_process``, ``open_async_process``: a REPL kept across requests, one side of a
relay), so such a process gets the same per-job cgroup (resident-memory and pids limits, CPU
accounting) as a job. By hand::

    lease = sandbox.lease(job)            # blocks until a uid slot is free
    try:
        with lease.command() as (argv, fds):
            proc = subprocess.Popen(argv, pass_fds=fds, env={}, start_new_session=True, ...)
    except BaseException:
        lease.release()
        raise
    ...                                   # lease.usage(): CPU, peak memory, OOM kills so far
    lease.release()                       # kills everything left, removes the cgroup, frees the uid

Where the host allows no cgroups (not root, read-only cgroupfs), ``lease.cgroup`` is None and
the command carries rlimits instead, exactly as before.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from typing import Protocol

from rl_verifier_sandbox.api import Job
from rl_verifier_sandbox.jobs.env import EXTRA_PROCS
from rl_verifier_sandbox.linux.cgroups import CgroupHost, CgroupUsage, JobCgroup
from rl_verifier_sandbox.linux.slots import UidSlots

log = logging.getLogger(__name__)


class LeaseHost(Protocol):
    """What a lease needs of its backend (``BwrapSandbox`` is one): uid slots, where job
    cgroups are made, and the command line of a job as a uid in a cgroup."""

    slots: UidSlots

    @property
    def cgroup_host(self) -> CgroupHost | None: ...

    def command(
        self, job: Job, uid: int, *, cgroup: JobCgroup | None = None
    ) -> AbstractContextManager[tuple[list[str], list[int]]]: ...


class Lease:
    """A uid slot and, where the host allows, a cgroup limited to ``job.limits``."""

    def __init__(self, sandbox: LeaseHost, job: Job) -> None:
        self.job = job
        self._sb = sandbox
        self._lock = threading.Lock()
        self._released = False
        self._final: CgroupUsage | None = None
        self.uid = sandbox.slots.acquire()
        self.cgroup: JobCgroup | None = None
        host = sandbox.cgroup_host
        if host is None:
            return
        lim = job.limits
        try:
            self.cgroup = host.create(
                memory_bytes=lim.memory_bytes, pids=lim.processes + EXTRA_PROCS
            )
        except OSError as exc:  # keep the job running, on rlimits
            log.warning("no cgroup for this job (%s); using rlimits", exc)
        except BaseException:
            sandbox.slots.release(self.uid)
            raise

    @property
    def mechanism(self) -> str:
        """``cgroup-v1``/``cgroup-v2`` when the process gets a cgroup, else ``rlimit``."""
        return self.cgroup.host.mechanism if self.cgroup else "rlimit"

    def command(self) -> AbstractContextManager[tuple[list[str], list[int]]]:
        """The host argv and fds to pass (see ``BwrapSandbox.command``); the fds are closed
        when the context exits, so spawn the process inside it."""
        return self._sb.command(self.job, self.uid, cgroup=self.cgroup)

    def usage(self) -> CgroupUsage | None:
        """CPU, peak memory, OOM kills and refused forks so far (final after ``release``);
        None without a cgroup."""
        if self.cgroup is None:
            return None
        return self._final if self._released else self.cgroup.usage()

    def release(self) -> CgroupUsage | None:
        """Kill every process left in the cgroup and of the uid, remove the cgroup, free the
        uid; return the final usage. Idempotent and thread-safe; blocks for a few ms."""
        with self._lock:
            if self._released:
                return self._final
            self._released = True
            try:
                if self.cgroup is not None:
                    self._final = self.cgroup.close()
            finally:
                self._sb.slots.release(self.uid)
            return self._final

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
