"""Start ``rlv serve`` in a child process and wait until it answers ``healthz``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from rl_verifier import UserError
from rl_verifier_server.serving.data_lock import wait_until_free

PREDECESSOR_WAIT_S = 60.0  # a killed run's server finishing its last request


class LocalServer:
    """A background ``rlv serve`` on a free loopback port; use as a context manager."""

    def __init__(
        self,
        data_dir: Path,
        preload: tuple[str, ...] = ("rlv/tiny-chat",),
        device: str = "auto",
        log_path: Path | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``extra_args`` go to ``rlv serve`` (e.g. ``--api-key``); ``env`` is added to
        the child's environment."""
        self.data_dir = data_dir
        self.preload = preload
        self.device = device
        self.log_path = log_path
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.stopping = False

    def start(self, timeout_s: float = 120.0) -> str:
        wait_until_free(self.data_dir, PREDECESSOR_WAIT_S)  # else rlv serve says who holds it
        workdir = Path(tempfile.mkdtemp(prefix="rlv-serve-"))
        port_file = workdir / "port"
        log_path = self.log_path or workdir / "server.log"
        args = [
            sys.executable,
            "-m",
            "rl_verifier_server",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--data-dir",
            str(self.data_dir),
            "--device",
            self.device,
        ]
        for name in self.preload or ("",):
            args += ["--preload", name]
        args += self.extra_args
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                args,
                stdout=log,
                stderr=log,
                env={**os.environ, **self.env},
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise UserError(f"rlv serve exited with {self.process.returncode}: {tail}")
            if port_file.exists():
                self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"
                if healthy(self.url):
                    return self.url
            time.sleep(0.1)
        self.stop()
        raise UserError(f"rlv serve did not answer within {timeout_s:.0f}s (log: {log_path})")

    def watch(self, on_exit: Callable[[str], None]) -> None:
        """Call ``on_exit(how it ended)`` from a thread if the server ends before ``stop()``
        (the kernel's out-of-memory killer, a crash), so its client need not wait on retries."""
        process = self.process
        if process is None:
            raise RuntimeError("start the server before watching it")

        def wait() -> None:
            code = process.wait()
            if not self.stopping:
                on_exit(exit_description(code))

        threading.Thread(target=wait, name="rlv-serve-watch", daemon=True).start()

    def stop(self) -> None:
        self.stopping = True
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> LocalServer:
        if self.process is None:
            self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def exit_description(code: int) -> str:
    """How a process with return code ``code`` ended, in words."""
    if code >= 0:
        return f"exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    if -code == signal.SIGKILL:
        return f"was killed ({name}: most often the kernel's out-of-memory killer; see dmesg)"
    return f"was killed by {name}"


def die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def healthy(url: str, timeout_s: float = 2.0) -> bool:
    """Whether a Tinker-compatible server answers at ``url``."""
    try:
        with urllib.request.urlopen(f"{url}/api/v1/healthz", timeout=timeout_s) as response:
            return bool(json.loads(response.read()).get("status") == "ok")
    except (OSError, ValueError):
        return False
