"""Dedicated unprivileged uids, one per concurrent job, and cleanup of their processes."""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

BASE_UID = int(os.environ.get("RLV_SANDBOX_BASE_UID", "60000"))


def pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) host pids whose owner is ``uid`` (as seen in /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                out.append(int(name))
    return out


def reap_uid(uid: int, timeout: float = 2.0) -> int:
    """SIGKILL every process of ``uid`` until none remain; return how many were killed."""
    killed = 0
    end = time.monotonic() + timeout
    while True:
        pids = pids_of_uid(uid)
        if not pids or time.monotonic() > end:
            return killed
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)


def _lock_dir() -> str:
    for base in ("/run/lock", tempfile.gettempdir()):
        path = os.path.join(base, "rl-verifier-sandbox")
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            return path
        except OSError:
            continue
    raise OSError("no writable directory for sandbox uid locks")


class UidSlots:
    """Uids ``base .. base+count-1``; a job (or fork server) holds one for its whole life.

    Each held uid is an exclusive ``flock`` on a lock file, so sandboxes in this process and in
    other processes on the host never share a uid (RLIMIT_NPROC and cleanup are per uid).
    """

    def __init__(self, base: int = BASE_UID, count: int = 32) -> None:
        self._uids = range(base, base + count)
        self._dir = _lock_dir()
        self._held: dict[int, int] = {}
        self._mutex = threading.Lock()

    def acquire(self) -> int:
        while True:
            for uid in self._uids:
                fd = os.open(os.path.join(self._dir, f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                with self._mutex:
                    self._held[uid] = fd
                return uid
            time.sleep(0.005)

    def release(self, uid: int) -> None:
        """Kill whatever the uid left behind, then free it."""
        if os.geteuid() == 0:
            reap_uid(uid)
        with self._mutex:
            fd = self._held.pop(uid)
        os.close(fd)

    @contextmanager
    def hold(self) -> Iterator[int]:
        uid = self.acquire()
        try:
            yield uid
        finally:
            self.release(uid)
