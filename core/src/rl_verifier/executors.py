"""Where verifier code runs: in this process, or in killable worker processes.

An executor takes one configured verifier, one task and one completion, and always
returns a ``Verdict``: a timeout or a crash becomes a verdict with that status,
never an exception. The scoring engine does not care which executor it has; a
distributed executor plugs in behind the same two methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from abc import ABC, abstractmethod
from typing import Any

from rl_verifier.contracts import Completion, Status, Task, Verdict
from rl_verifier.errors import UserError
from rl_verifier.piped import PipedProcess
from rl_verifier.verifier import Verifier
from rl_verifier.verifier_calls import (
    Message,
    call_verify,
    describe,
    open_failure,
    open_request,
    read_verdict,
    verify_request,
)

PROTOCOL_LIMIT = 256 * 1024 * 1024  # largest message a worker may send back
STDERR_TAIL = 4000


class Executor(ABC):
    """Runs verifiers. Use as ``async with executor: ...``."""

    capacity: int = 1

    async def __aenter__(self) -> Executor:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Prepare to run."""

    @abstractmethod
    async def run(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        """Judge one sample within ``verifier.timeout_s``; never raises."""

    @abstractmethod
    async def stop(self) -> None:
        """Close every verifier this executor opened and release its resources."""


class InlineExecutor(Executor):
    """Runs verifiers in this process. Fast, but a check that hangs in Python code or
    a C call cannot be stopped: it is reported as ``timeout`` at its deadline while
    its thread runs on. For trusted, quick verifiers and for debugging."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity or (os.cpu_count() or 1) * 4
        self._opened: dict[int, Verifier] = {}
        self._open_lock = asyncio.Lock()

    async def _ensure_open(self, verifier: Verifier) -> None:
        if id(verifier) in self._opened:
            return
        async with self._open_lock:
            if id(verifier) not in self._opened:
                await verifier.open()
                self._opened[id(verifier)] = verifier

    async def run(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        try:
            await self._ensure_open(verifier)
        except Exception as exc:  # noqa: BLE001
            return Verdict.errored(f"open() failed: {describe(exc)}")
        try:
            return await asyncio.wait_for(
                call_verify(verifier, task, completion), verifier.timeout_s
            )
        except TimeoutError:
            return Verdict(status=Status.TIMEOUT, error=f"no verdict within {verifier.timeout_s}s")
        except Exception as exc:  # noqa: BLE001
            return Verdict.errored(describe(exc))

    async def stop(self) -> None:
        opened, self._opened = list(self._opened.values()), {}
        for verifier in opened:
            with contextlib.suppress(Exception):
                await verifier.close()


class WorkerDied(Exception):
    """The worker process ended before answering."""


class Worker(PipedProcess):
    """One worker process speaking JSON lines on its stdin and stdout."""

    noun = "verifier worker"

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        super().__init__(proc)
        self.opened: set[str] = set()

    @classmethod
    async def spawn(cls) -> Worker:
        env = dict(os.environ, RLV_WORKER_SYS_PATH=json.dumps(sys.path))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "rl_verifier.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=PROTOCOL_LIMIT,
            env=env,
        )
        return cls(proc)

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            await self.proc.stdin.drain()
            line = await self.proc.stdout.readline()
        except (BrokenPipeError, ConnectionResetError, ValueError) as exc:
            raise WorkerDied(describe(exc)) from None
        if not line:
            raise WorkerDied("worker closed its output")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def shutdown(self) -> None:
        """Ask the worker to close its verifiers and exit; kill it if it lingers."""
        if self.alive and self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 10)
        await self.stop()


class ProcessExecutor(Executor):
    """Runs verifiers in a pool of worker processes, one sample per worker at a time.

    A sample past its deadline has its worker killed, process group and all, so a
    pure-Python loop or a blocking C call really stops; the pool starts a fresh
    worker for the next sample. Each worker opens a verifier on first use and keeps
    it open until the executor stops.
    """

    def __init__(self, workers: int | None = None, open_timeout_s: float = 600.0) -> None:
        self.capacity = workers or os.cpu_count() or 1
        self.open_timeout_s = open_timeout_s
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._slots = asyncio.Semaphore(self.capacity)
        self._reapers: set[asyncio.Task[None]] = set()

    async def run(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        try:
            opening = open_request(verifier)
        except UserError as exc:
            return Verdict.errored(str(exc))
        asking = verify_request(opening["key"], task, completion)
        if isinstance(asking, Verdict):
            return asking
        async with self._slots:
            worker = await self._take()
            if worker is None:
                return Verdict.errored("could not start a verifier worker process")
            try:
                verdict, healthy = await self._run_on(worker, opening, asking, verifier.timeout_s)
            except BaseException as exc:
                # The caller gave up (a client went away), or something failed on the way:
                # the worker may be mid-check, so it is killed with everything it started
                # rather than left running or left out of the pool's count.
                self._all.discard(worker)
                self._reap(worker)
                if isinstance(exc, Exception):
                    return Verdict.errored(f"verifier worker call failed: {describe(exc)}")
                raise
            if healthy:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
            return verdict

    async def _take(self) -> Worker | None:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive:
                return worker
            self._all.discard(worker)
        try:
            worker = await Worker.spawn()
        except OSError:
            return None
        self._all.add(worker)
        return worker

    async def _run_on(
        self, worker: Worker, opening: Message, asking: Message, timeout_s: float
    ) -> tuple[Verdict, bool]:
        key = opening["key"]
        if key not in worker.opened:
            outcome = await self._ask(worker, opening, self.open_timeout_s)
            if isinstance(outcome, Verdict):
                if outcome.status is Status.TIMEOUT:
                    outcome = Verdict.errored(f"open() took longer than {self.open_timeout_s}s")
                return outcome, worker.alive
            failure = open_failure(outcome)
            if failure is not None:
                return failure, True
            worker.opened.add(key)
        outcome = await self._ask(worker, asking, timeout_s)
        if isinstance(outcome, Verdict):
            return outcome, False
        return read_verdict(outcome), True

    async def _ask(
        self, worker: Worker, message: dict[str, Any], timeout_s: float
    ) -> dict[str, Any] | Verdict:
        """Send one request; a timeout or a dead worker comes back as a Verdict."""
        try:
            return await asyncio.wait_for(worker.request(message), timeout_s)
        except TimeoutError:
            self._reap(worker)
            return Verdict(status=Status.TIMEOUT, error=f"no verdict within {timeout_s}s")
        except WorkerDied:
            worker.kill()
            return Verdict.errored(await worker.death_report())
        except (json.JSONDecodeError, asyncio.LimitOverrunError, ValueError) as exc:
            worker.kill()
            return Verdict.errored(f"unreadable answer from verifier worker: {describe(exc)}")

    def _reap(self, worker: Worker) -> None:
        """Kill a worker (process group and all) now and wait for it in the background."""
        worker.kill()
        reaper = asyncio.get_running_loop().create_task(worker.shutdown())
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)

    async def stop(self) -> None:
        workers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        await asyncio.gather(*self._reapers, return_exceptions=True)
