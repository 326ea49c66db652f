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
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rl_verifier.base.contracts import Completion, Status, Task, Verdict
from rl_verifier.base.verifier import Verifier
from rl_verifier.execution.batch_calls import batch_request
from rl_verifier.execution.piped import PipedProcess
from rl_verifier.execution.ray_batches import BatchQueue, Item, settle_batch, stop_batches
from rl_verifier.execution.verifier_calls import (
    Message,
    cached_opening,
    call_verify,
    call_verify_group,
    describe,
    open_failure,
    read_verdict,
    verify_request,
)

PROTOCOL_LIMIT = 256 * 1024 * 1024  # largest message a worker may send back
STDERR_TAIL = 4000
MAX_BATCH = 256  # most samples in one worker message
BATCH_TARGET_S = 0.01  # work per message: the ~0.1 ms pipe round trip is then about 1%
# A batch that has not answered by its first sample's deadline plus this, and plus ten
# times its expected work, is taken for a wedged worker and sent again sample by sample.
BATCH_GRACE_S = 5.0


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

    async def run_group(
        self, verifier: Verifier, task: Task, completions: Sequence[Completion]
    ) -> list[Verdict]:
        """Judge a group within ``verifier.timeout_s``; never raises. Group verifiers (LLM
        judges: calls to a service, no untrusted code) run in this process, on its loop."""
        groups: Executor = self.__dict__.setdefault("_groups", InlineExecutor(1))
        return await groups.run_group(verifier, task, completions)

    async def stop_groups(self) -> None:
        """Close the group verifiers ``run_group`` opened."""
        groups = self.__dict__.pop("_groups", None)
        if groups is not None:
            await groups.stop()


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

    async def run_group(
        self, verifier: Verifier, task: Task, completions: Sequence[Completion]
    ) -> list[Verdict]:
        def each(verdict: Verdict) -> list[Verdict]:
            return [verdict] * len(completions)

        try:
            await self._ensure_open(verifier)
        except Exception as exc:  # noqa: BLE001
            return each(Verdict.errored(f"open() failed: {describe(exc)}"))
        try:
            return await asyncio.wait_for(
                call_verify_group(verifier, task, completions), verifier.timeout_s
            )
        except TimeoutError:
            message = f"no verdict for the group within {verifier.timeout_s}s"
            return each(Verdict(status=Status.TIMEOUT, error=message))
        except Exception as exc:  # noqa: BLE001
            return each(Verdict.errored(describe(exc)))

    async def stop(self) -> None:
        await self.stop_groups()
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
            "rl_verifier.execution.worker",
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
    """Runs verifiers in a pool of worker processes, one message per worker at a time.

    A sample past its deadline has its worker killed, process group and all, so a
    pure-Python loop or a blocking C call really stops; the pool starts a fresh
    worker for the next sample. Each worker opens a verifier on first use and keeps
    it open until the executor stops.

    While a worker is free a sample goes to it alone. Samples that arrive while every
    worker is busy wait in a queue per verifier and go in batches (``max_batch``; 1
    sends each sample alone), sized to about ``batch_target_s`` of work from the
    measured cost per sample, so a cheap check pays the pipe round trip and the JSON
    framing once per batch. Deadlines stay per sample: the worker cuts a sample at its
    ``timeout_s``, that sample is ``timeout``, the worker is killed and the rest are
    sent again; a batch whose worker dies or wedges is sent again one sample per
    message, so the sample that crashed or hung is the one that gets ``error`` or
    ``timeout`` (the queue is ``ray_batches.BatchQueue``, the messages
    ``batch_calls``, as for the Ray executor).
    """

    def __init__(
        self,
        workers: int | None = None,
        open_timeout_s: float = 600.0,
        max_batch: int = MAX_BATCH,
        batch_target_s: float = BATCH_TARGET_S,
    ) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.max_batch = max(1, max_batch)
        self.batch_target_s = batch_target_s
        # What the engine keeps in flight: enough waiting samples to fill the batches.
        self.capacity = self.workers * self.max_batch
        self.open_timeout_s = open_timeout_s
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._slots = asyncio.Semaphore(self.workers)
        self._reapers: set[asyncio.Task[None]] = set()
        self._openings: dict[int, tuple[Verifier, Message]] = {}
        self._queues: dict[str, _Queue] = {}
        self._drains: set[asyncio.Task[None]] = set()

    async def run(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        opening = cached_opening(self._openings, verifier)
        if isinstance(opening, Verdict):
            return opening
        queue = self._queue(opening)
        if self.max_batch == 1 or (not self._slots.locked() and not queue.batches.waiting):
            return await self._run_alone(opening, verifier.timeout_s, task, completion)
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        queue.batches.waiting.append(Item(task, completion, verifier.timeout_s, future))
        self._start_drains(queue)
        return await future

    async def _run_alone(
        self, opening: Message, timeout_s: float, task: Task, completion: Completion
    ) -> Verdict:
        """One sample in one message; the caller's cancellation kills its worker."""
        asking = verify_request(opening["key"], task, completion)
        if isinstance(asking, Verdict):
            return asking
        async with self._slots:
            return await self._on_worker(opening, asking, timeout_s)

    async def _on_worker(self, opening: Message, asking: Message, timeout_s: float) -> Verdict:
        """``asking`` on a pooled worker (a slot held): its verdict, the worker returned to
        the pool if it is still usable."""
        worker = await self._take()
        if worker is None:
            return Verdict.errored("could not start a verifier worker process")
        try:
            verdict, healthy = await self._run_on(worker, opening, asking, timeout_s)
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

    def _queue(self, opening: Message) -> _Queue:
        key = opening["key"] + ":" + opening["cls"]
        queue = self._queues.get(key)
        if queue is None:
            batches = BatchQueue(self.max_batch, self.batch_target_s, self.workers)
            queue = self._queues[key] = _Queue(opening, batches)
        return queue

    def _start_drains(self, queue: _Queue) -> None:
        """Enough drains for what waits in ``queue``: one per worker at most."""
        while queue.batches.waiting and queue.drains < self.workers:
            queue.drains += 1
            drain = asyncio.get_running_loop().create_task(self._drain(queue))
            self._drains.add(drain)
            drain.add_done_callback(self._drains.discard)

    async def _drain(self, queue: _Queue) -> None:
        """Send batches from ``queue`` as workers come free, until nothing waits."""
        try:
            while queue.batches.waiting:
                async with self._slots:
                    batch = queue.batches.take()
                    if not batch:
                        break
                    try:
                        await self._send(queue, batch)
                    except Exception as exc:  # noqa: BLE001 - every sample gets a verdict
                        failure = Verdict.errored(f"verifier worker call failed: {describe(exc)}")
                        for item in batch:
                            item.settle(failure)
        finally:
            queue.drains -= 1

    async def _send(self, queue: _Queue, batch: list[Item]) -> None:
        """Judge ``batch`` on one worker (a slot held); what is not judged is queued again."""
        if len(batch) == 1:
            await self._send_one(queue, batch[0])
            return
        opening = queue.opening
        message, sent, failures = batch_request(
            opening["key"], [(item.task, item.completion) for item in batch]
        )
        for position, verdict in failures.items():
            batch[position].settle(verdict)
        items = [batch[position] for position in sent]
        if not items:
            return
        timeout_s = items[0].timeout_s
        message["timeout_s"] = timeout_s
        worker = await self._take()
        if worker is None:
            for item in items:
                item.settle(Verdict.errored("could not start a verifier worker process"))
            return
        try:
            outcome = await self._batch_on(worker, queue, message, items)
        except BaseException:  # cancelled (the executor stops): the worker may be mid-batch
            self._all.discard(worker)
            self._reap(worker)
            for item in items:
                item.settle(Verdict.errored("process executor stopped while this sample ran"))
            raise
        if isinstance(outcome, Verdict):  # the open failed: every sample gets its verdict
            for item in items:
                item.settle(outcome)
            self._keep(worker, worker.alive)
            return
        if outcome is None:  # died, wedged or unreadable: each sample again, alone
            self._all.discard(worker)
            queue.batches.put_back(items, solo=True)
            return
        self._keep(worker, self._read_batch(queue, worker, items, outcome))

    async def _batch_on(
        self, worker: Worker, queue: _Queue, message: Message, items: list[Item]
    ) -> Message | Verdict | None:
        """The worker's batch answer; a Verdict where the open failed; None where the
        worker died, wedged or answered what cannot be read (it is killed then)."""
        opened = await self._open_on(worker, queue.opening)
        if opened is not None:
            return opened
        expected = len(items) * (queue.batches.cost_s or 0.0)
        backstop = items[0].timeout_s + BATCH_GRACE_S + 10 * expected
        outcome = await self._ask(worker, message, backstop)
        return None if isinstance(outcome, Verdict) else outcome

    def _read_batch(
        self, queue: _Queue, worker: Worker, items: list[Item], outcome: Message
    ) -> bool:
        """Settle what the batch judged; False when the worker must go (a sample ran past
        its deadline there and may still be running)."""
        stopped = settle_batch(queue.batches, items, outcome, "worker")
        if stopped is None:
            return True
        self._all.discard(worker)
        self._reap(worker)
        queue.batches.put_back(items[stopped + 1 :])
        return False

    async def _send_one(self, queue: _Queue, item: Item) -> None:
        """One queued sample alone. Its time, round trip included, bounds the cost per
        sample from above: the first estimate, or a lower one."""
        asking = verify_request(queue.opening["key"], item.task, item.completion)
        if isinstance(asking, Verdict):
            item.settle(asking)
            return
        started = time.perf_counter()
        verdict = await self._on_worker(queue.opening, asking, item.timeout_s)
        item.settle(verdict)
        took, cost = time.perf_counter() - started, queue.batches.cost_s
        if verdict.status.judged and (cost is None or took < cost):
            queue.batches.observe(1, took)

    def _keep(self, worker: Worker, healthy: bool) -> None:
        if healthy and worker.alive:
            self._idle.append(worker)
        else:
            self._all.discard(worker)

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

    async def _open_on(self, worker: Worker, opening: Message) -> Verdict | None:
        """Open the verifier on ``worker`` unless it is open there; a Verdict if that failed."""
        key = opening["key"]
        if key in worker.opened:
            return None
        outcome = await self._ask(worker, opening, self.open_timeout_s)
        if isinstance(outcome, Verdict):
            if outcome.status is Status.TIMEOUT:
                outcome = Verdict.errored(f"open() took longer than {self.open_timeout_s}s")
            return outcome
        failure = open_failure(outcome)
        if failure is None:
            worker.opened.add(key)
        return failure

    async def _run_on(
        self, worker: Worker, opening: Message, asking: Message, timeout_s: float
    ) -> tuple[Verdict, bool]:
        failure = await self._open_on(worker, opening)
        if failure is not None:
            return failure, worker.alive
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
        await self.stop_groups()
        drains, self._drains = list(self._drains), set()
        queues = [queue.batches for queue in self._queues.values()]
        await stop_batches(drains, queues, "process executor")
        self._queues, self._openings = {}, {}
        workers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        await asyncio.gather(*self._reapers, return_exceptions=True)


@dataclass
class _Queue:
    """Samples of one verifier configuration waiting for a worker."""

    opening: Message
    batches: BatchQueue
    drains: int = 0
