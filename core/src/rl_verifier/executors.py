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
import signal
import sys
from abc import ABC, abstractmethod
from collections import deque
from typing import Any

from pydantic import ValidationError

from rl_verifier.contracts import Completion, Status, Task, Verdict
from rl_verifier.errors import UserError
from rl_verifier.verifier import Verifier

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


def coerce_verdict(value: Any) -> Verdict:
    """Accept a Verdict, a bare reward, or a dict with Verdict's fields."""
    if isinstance(value, Verdict):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | dict):
        raise TypeError(f"verify() returned {type(value).__name__}, expected a Verdict")
    if isinstance(value, dict):
        return Verdict.model_validate(value)
    return Verdict.ok(float(value))


async def call_verify(verifier: Verifier, task: Task, completion: Completion) -> Verdict:
    """Run ``verify`` (async, or sync in a thread) and coerce its result."""
    value: Any
    if verifier.is_async():
        value = await verifier.verify(task, completion)  # type: ignore[misc]
    else:
        value = await asyncio.to_thread(verifier.verify, task, completion)
    return coerce_verdict(value)


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
            return Verdict.failed(f"open() failed: {describe(exc)}")
        try:
            return await asyncio.wait_for(
                call_verify(verifier, task, completion), verifier.timeout_s
            )
        except TimeoutError:
            return Verdict(status=Status.TIMEOUT, error=f"no verdict within {verifier.timeout_s}s")
        except Exception as exc:  # noqa: BLE001
            return Verdict.failed(describe(exc))

    async def stop(self) -> None:
        opened, self._opened = list(self._opened.values()), {}
        for verifier in opened:
            with contextlib.suppress(Exception):
                await verifier.close()


def class_path(cls: type) -> str:
    """``module:qualname`` a worker process can import."""
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise UserError(
            f"verifier class {cls.__qualname__} is defined in {cls.__module__} and cannot be "
            "loaded by a worker process; define it at module level in an importable module, "
            "or use the inline executor"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


async def drain_lines(stream: asyncio.StreamReader, tail: deque[str]) -> None:
    """Read ``stream`` to its end, keeping its last lines in ``tail`` (for error messages)."""
    while line := await stream.readline():
        tail.append(line.decode(errors="replace"))


class PipedProcess:
    """A child started in its own session, its stderr drained into a short tail: killable
    as a group, and able to say how it died."""

    noun = "process"  # how death reports name it

    def __init__(self, proc: asyncio.subprocess.Process, tail_lines: int = 40) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.stderr_tail: deque[str] = deque(maxlen=tail_lines)
        self._drain = asyncio.create_task(drain_lines(proc.stderr, self.stderr_tail))

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def kill(self) -> None:
        """Kill the process and everything it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def death_report(self) -> str:
        """'<noun> died (exit code N | signal N): <last stderr lines>'."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 2)
            await asyncio.wait_for(asyncio.shield(self._drain), 1)
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        tail = " | ".join("".join(self.stderr_tail).strip().splitlines()[-3:])
        return f"{self.noun} died ({how})" + (f": {tail}" if tail else "")

    async def stop(self) -> None:
        """Kill, reap, and stop draining."""
        self.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.proc.wait(), 5)
        self._drain.cancel()


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
            target = {
                "key": verifier.config_hash + ":" + verifier.name,
                "cls": class_path(type(verifier)),
                "config": verifier.config.model_dump(mode="json"),
            }
        except UserError as exc:
            return Verdict.failed(str(exc))
        async with self._slots:
            worker = await self._take()
            if worker is None:
                return Verdict.failed("could not start a verifier worker process")
            verdict, healthy = await self._run_on(worker, verifier, target, task, completion)
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
        self,
        worker: Worker,
        verifier: Verifier,
        target: dict[str, Any],
        task: Task,
        completion: Completion,
    ) -> tuple[Verdict, bool]:
        key = target["key"]
        if key not in worker.opened:
            outcome = await self._ask(worker, {"op": "open", **target}, self.open_timeout_s)
            if isinstance(outcome, Verdict):
                if outcome.status is Status.TIMEOUT:
                    outcome = Verdict.failed(f"open() took longer than {self.open_timeout_s}s")
                return outcome, worker.alive
            if not outcome["ok"]:
                return Verdict.failed(f"open() failed: {outcome['error']}"), True
            worker.opened.add(key)
        message = {
            "op": "verify",
            "key": key,
            "task": task.model_dump(mode="json"),
            "completion": completion.model_dump(mode="json"),
        }
        outcome = await self._ask(worker, message, verifier.timeout_s)
        if isinstance(outcome, Verdict):
            return outcome, False
        if not outcome["ok"]:
            info = {"traceback": outcome.get("traceback", "")}
            return Verdict.failed(outcome["error"], **info), True
        try:
            return Verdict.model_validate(outcome["verdict"]), True
        except ValidationError as exc:
            return Verdict.failed(f"verify() returned a malformed verdict: {exc}"), True

    async def _ask(
        self, worker: Worker, message: dict[str, Any], timeout_s: float
    ) -> dict[str, Any] | Verdict:
        """Send one request; a timeout or a dead worker comes back as a Verdict."""
        try:
            return await asyncio.wait_for(worker.request(message), timeout_s)
        except TimeoutError:
            worker.kill()
            reaper = asyncio.get_running_loop().create_task(worker.shutdown())
            self._reapers.add(reaper)
            reaper.add_done_callback(self._reapers.discard)
            return Verdict(status=Status.TIMEOUT, error=f"no verdict within {timeout_s}s")
        except WorkerDied:
            worker.kill()
            return Verdict.failed(await worker.death_report())
        except (json.JSONDecodeError, asyncio.LimitOverrunError, ValueError) as exc:
            worker.kill()
            return Verdict.failed(f"unreadable answer from verifier worker: {describe(exc)}")

    async def stop(self) -> None:
        workers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        await asyncio.gather(*self._reapers, return_exceptions=True)
