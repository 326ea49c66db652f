"""Where a warm fork-server pool's time goes: server start-ups, jobs, the servers' own work."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace


@dataclass
class PoolStats:
    """Running totals of one ``PythonPool`` (thread-safe; read them with ``snapshot``).

    ``job_cpu_s`` is what the forked jobs used (user + system); ``server_cpu_s`` what the
    servers themselves used on the jobs' behalf (reading the job, forking, killing what it
    left, wiping its files); ``start_cpu_s`` what their start-ups used inside the sandbox
    (interpreter and warm imports). CPU of bwrap itself is in none of them."""

    servers_started: int = 0
    start_wall_s: float = 0.0
    start_cpu_s: float = 0.0
    jobs: int = 0
    job_cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def started(self, wall_s: float, cpu_s: float) -> None:
        with self._lock:
            self.servers_started += 1
            self.start_wall_s += wall_s
            self.start_cpu_s += cpu_s

    def ran(self, job_cpu_s: float, server_cpu_s: float) -> None:
        with self._lock:
            self.jobs += 1
            self.job_cpu_s += job_cpu_s
            self.server_cpu_s += server_cpu_s

    def snapshot(self) -> PoolStats:
        """A copy of the totals as they are now (with a lock of its own)."""
        with self._lock:
            return replace(self)
