"""The data directory's lock: one ``rlv serve`` per data directory.

``rlv serve`` holds an exclusive ``flock`` on ``DIR/.rlv-serve.lock`` while it lives (the
kernel releases it even on SIGKILL) and writes its pid there for the error message.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO

from rl_verifier import UserError

LOCK_FILE = ".rlv-serve.lock"


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold the data directory's lock while the process lives (released even on SIGKILL)."""
    handle = (data_dir / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise UserError(
            f"{data_dir} is in use by another rlv serve ({holder}); give this one its own "
            "--data-dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def wait_until_free(data_dir: Path, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for no ``rlv serve`` to hold ``data_dir``; whether it is free.

    For a run's own embedded server: when a killed ``rlv train`` is resumed at once, the
    server it started is still finishing its last request on the way out.
    """
    path = data_dir / LOCK_FILE
    if not path.exists():
        return True
    deadline = time.monotonic() + timeout_s
    with path.open("a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)
                continue
            fcntl.flock(handle, fcntl.LOCK_UN)
            return True
