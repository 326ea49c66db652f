"""Run verifiers on a Ray cluster, with the same verdicts as the local process executor.

Each configured verifier gets a small pool of Ray actors (``workers`` of them, spread
over the cluster's nodes, created lazily). An actor loads the verifier class by its
``module:qualname`` path, builds it from the config dict, calls ``open()`` once and
keeps it for every later sample, so expensive state (an index, a Lean environment) is
paid for once per actor. Stateless verifiers use actors too, for one code path.

Tasks and completions travel as plain dicts, verdicts come back as dicts. Every await
on Ray has a deadline: a sample past ``timeout_s`` is ``timeout`` and its actor is
killed (so the hung work really stops) and recreated on next use; an actor that dies
turns its sample into ``error`` with Ray's message. Each actor runs at most
``actor_concurrency`` calls at once (one by default, as a worker process does), which
bounds what is in flight and in the object store however large the batch.

Samples travel in batches (``max_batch``, 256 by default; 1 sends each sample alone): a
call carries about ``batch_target_s`` of work for the verifier's measured cost per
sample, so a cheap check pays Ray's round trip once per batch and an expensive one still
goes one sample at a time. Deadlines stay per sample: the actor cuts a sample at its
``timeout_s`` and the executor kills that actor and sends the rest again; a batch whose
actor dies, or that does not answer at all, is sent again one sample per call, so the
sample that crashed or hung is the one that gets ``error`` or ``timeout``
(``ray_batches.py`` holds the queue, ``batch_calls.py`` the batch messages).

Ray is imported only when the executor starts; the core works without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from rl_verifier.base.contracts import Completion, Status, Task, Verdict
from rl_verifier.base.errors import UserError
from rl_verifier.base.verifier import Verifier
from rl_verifier.execution.batch_calls import batch_request, verify_batch_answer
from rl_verifier.execution.executors import Executor
from rl_verifier.execution.ray_batches import BatchQueue, Item, settle_batch, stop_batches
from rl_verifier.execution.verifier_calls import (
    OK_ANSWER,
    Message,
    cached_opening,
    describe,
    error_answer,
    open_failure,
    open_request,
    open_verifier,
    read_verdict,
    verify_answer,
    verify_request,
)

CLOSE_TIMEOUT_S = 10.0
MAX_BATCH = 256
BATCH_TARGET_S = 0.02  # work per batch: Ray's ~1 ms round trip is then a few percent
# A batch that has not answered by its last sample's deadline plus this, and plus ten
# times its expected work, is taken for a wedged actor and sent again sample by sample.
BATCH_GRACE_S = 5.0
_temp_dirs: list[str] = []  # log folders of local instances this process started


def _import_ray() -> Any:
    try:
        import ray  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise UserError("the ray executor needs Ray: pip install 'rl-verifier[ray]'") from exc
    return ray


def local_runtime_env() -> dict[str, Any]:
    """Environment for workers on this machine: they see this process's ``sys.path``."""
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}


def init_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Start a local Ray instance on 127.0.0.1 (no ``address``) or join a cluster.

    Returns True when this call connected (so the caller should shut Ray down).
    """
    ray = _import_ray()
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        _temp_dirs.append(tempfile.mkdtemp(prefix="rlv-ray-"))
        ray.init(
            address=None,
            num_cpus=num_cpus or os.cpu_count() or 1,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=_temp_dirs[-1],
            runtime_env=local_runtime_env(),
            log_to_driver=False,
        )
    return True


def shutdown_ray() -> None:
    """Disconnect (stopping a local instance) and remove local instances' log folders."""
    _import_ray().shutdown()
    while _temp_dirs:
        shutil.rmtree(_temp_dirs.pop(), ignore_errors=True)


class VerifierHost:
    """The actor body: one opened verifier, judging samples sent as dicts."""

    def __init__(self, request: Message) -> None:
        self.request = request  # the codec's open request
        self.verifier: Verifier | None = None

    async def open(self) -> Message:
        try:
            self.verifier = await open_verifier(self.request)
        except Exception as exc:  # noqa: BLE001 - reported to the driver
            return error_answer(exc)
        return {**OK_ANSWER, "pid": os.getpid()}

    async def verify(self, request: Message) -> Message:
        assert self.verifier is not None, "open() first"
        return await verify_answer(self.verifier, request)

    async def verify_batch(self, request: Message, timeout_s: float) -> Message:
        assert self.verifier is not None, "open() first"
        return await verify_batch_answer(self.verifier, request, timeout_s)

    async def close(self) -> None:
        if self.verifier is not None:
            await self.verifier.close()


@dataclass
class _Slot:
    """One actor position in a pool; ``handle`` is None until (re)created."""

    handle: Any = None
    generation: int = 0
    ready: asyncio.Lock = field(default_factory=asyncio.Lock)


class _Pool:
    """The actors serving one verifier configuration."""

    def __init__(self, opening: Message, size: int, per_actor: int, queue: BatchQueue) -> None:
        self.opening = opening
        self.slots = [_Slot() for _ in range(size)]
        self.free: asyncio.Queue[int] = asyncio.Queue()
        for _ in range(per_actor):
            for index in range(size):
                self.free.put_nowait(index)
        self.queue = queue


class RayExecutor(Executor):
    """Runs verifiers in Ray actors, locally or on a cluster (``address``)."""

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        actor_concurrency: int = 1,
        actor_cpus: float | None = None,
        runtime_env: dict[str, Any] | None = None,
        open_timeout_s: float = 600.0,
        max_batch: int = MAX_BATCH,
        batch_target_s: float = BATCH_TARGET_S,
    ) -> None:
        """``max_batch``: most samples per actor call (1: one sample per call, as before
        batching); ``batch_target_s``: the work a batch aims at."""
        self.address = address
        self.workers = workers
        self.actor_concurrency = actor_concurrency
        self.actor_cpus = actor_cpus
        self.runtime_env = runtime_env
        self.open_timeout_s = open_timeout_s
        self.max_batch = max(1, max_batch)
        self.batch_target_s = batch_target_s
        self.capacity = (workers or os.cpu_count() or 1) * actor_concurrency * self.max_batch
        self._ray: Any = None
        self._remote: Any = None
        self._owns_ray = False
        self._pools: dict[str, _Pool] = {}
        self._slots: asyncio.Semaphore | None = None
        self._openings: dict[int, tuple[Verifier, Message]] = {}
        self._queued: dict[int, tuple[Verifier, _Pool]] = {}  # each verifier's pool
        self._drains: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._ray = _import_ray()
        self._owns_ray = init_ray(self.address, self.workers)
        if self.workers is None:
            cpus = int(self._ray.cluster_resources().get("CPU", 1))
            self.workers = max(cpus, 1)
        lanes = self.workers * self.actor_concurrency
        self.capacity = lanes * self.max_batch
        self._slots = asyncio.Semaphore(lanes)
        self._remote = self._ray.remote(VerifierHost)

    async def run(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        if self._ray is None:
            await self.start()
        if self.max_batch > 1:
            return await self._run_batched(verifier, task, completion)
        assert self._slots is not None
        try:
            opening = open_request(verifier)
        except UserError as exc:
            return Verdict.errored(str(exc))
        pool = self._pool(opening)
        request = verify_request(opening["key"], task, completion)
        if isinstance(request, Verdict):
            return request
        async with self._slots:
            index = await pool.free.get()
            try:
                return await self._run_on(pool, pool.slots[index], verifier.timeout_s, request)
            except Exception as exc:  # noqa: BLE001 - run() never raises
                return Verdict.errored(f"ray executor: {describe(exc)}")
            finally:
                pool.free.put_nowait(index)

    def _pool(self, opening: Message) -> _Pool:
        key = opening["key"] + ":" + opening["cls"]
        pool = self._pools.get(key)
        if pool is None:
            lanes = (self.workers or 1) * self.actor_concurrency
            queue = BatchQueue(self.max_batch, self.batch_target_s, lanes)
            pool = _Pool(opening, self.workers or 1, self.actor_concurrency, queue)
            self._pools[key] = pool
        return pool

    async def _run_batched(self, verifier: Verifier, task: Task, completion: Completion) -> Verdict:
        known = self._queued.get(id(verifier))
        if known is None or known[0] is not verifier:
            opening = cached_opening(self._openings, verifier)
            if isinstance(opening, Verdict):
                return opening
            known = self._queued[id(verifier)] = (verifier, self._pool(opening))
        pool = known[1]
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        pool.queue.waiting.append(Item(task, completion, verifier.timeout_s, future))
        if not pool.free.empty():
            self._start_drains(pool)
        return await future

    def _start_drains(self, pool: _Pool) -> None:
        """Put every free actor position of ``pool`` to work on what is waiting."""
        while pool.queue.waiting and not pool.free.empty():
            drain = asyncio.get_running_loop().create_task(
                self._drain(pool, pool.free.get_nowait())
            )
            self._drains.add(drain)
            drain.add_done_callback(self._drains.discard)

    async def _drain(self, pool: _Pool, index: int) -> None:
        """Send batches from ``pool``'s queue through one actor position until it is empty."""
        assert self._slots is not None
        try:
            while batch := pool.queue.take():
                async with self._slots:
                    try:
                        await self._send(pool, pool.slots[index], batch)
                    except Exception as exc:  # noqa: BLE001 - every sample gets a verdict
                        failure = Verdict.errored(f"ray executor: {describe(exc)}")
                        for item in batch:
                            item.settle(failure)
        finally:
            pool.free.put_nowait(index)

    async def _send(self, pool: _Pool, slot: _Slot, batch: list[Item]) -> None:
        """Judge ``batch`` on ``slot``'s actor; what is not judged goes back in the queue."""
        restarted = [item for item in batch if item.restarts >= 2]
        for item in restarted:
            item.settle(Verdict.errored("verifier actor was restarted twice while this sample ran"))
        batch = [item for item in batch if item.restarts < 2]
        if len(batch) == 1:
            await self._send_one(pool, slot, batch[0])
            return
        message, sent, failures = batch_request(
            pool.opening["key"], [(item.task, item.completion) for item in batch]
        )
        for position, verdict in failures.items():
            batch[position].settle(verdict)
        items = [batch[position] for position in sent]
        if not items:
            return
        handle = await self._actor(pool, slot)
        if isinstance(handle, Verdict):
            for item in items:
                item.settle(handle)
            return
        generation = slot.generation
        timeout_s = items[0].timeout_s
        expected = len(items) * (pool.queue.cost_s or 0.0)
        backstop = timeout_s + BATCH_GRACE_S + 10 * expected
        ref = handle.verify_batch.remote(message, timeout_s)
        outcome = await self._await(ref, backstop)
        if isinstance(outcome, dict):
            self._read_batch(pool, slot, handle, items, outcome)
            return
        assert isinstance(outcome, Verdict)
        if slot.generation != generation and outcome.status is Status.ERROR:
            pool.queue.put_back(items, restarted=True)  # our own kill (a timeout) ended it
            return
        self._retire(slot, handle)
        pool.queue.put_back(items, solo=True)  # lost or wedged: each sample alone

    def _read_batch(
        self, pool: _Pool, slot: _Slot, handle: Any, items: list[Item], outcome: Message
    ) -> None:
        stopped = settle_batch(pool.queue, items, outcome, "actor")
        if stopped is None:
            return
        self._retire(slot, handle)  # the hung call may still be running there
        pool.queue.put_back(items[stopped + 1 :])

    async def _send_one(self, pool: _Pool, slot: _Slot, item: Item) -> None:
        """One sample through the one-sample path. Its time, round trip included, bounds
        the cost per sample from above: the first estimate, or a lower one."""
        request = verify_request(pool.opening["key"], item.task, item.completion)
        if isinstance(request, Verdict):
            item.settle(request)
            return
        await self._actor(pool, slot)  # its start-up is not the sample's cost
        started = time.perf_counter()
        verdict = await self._run_on(pool, slot, item.timeout_s, request)
        item.settle(verdict)
        took, cost = time.perf_counter() - started, pool.queue.cost_s
        if verdict.status.judged and (cost is None or took < cost):
            pool.queue.observe(1, took)

    def _retire(self, slot: _Slot, handle: Any) -> None:
        """Kill ``slot``'s actor; the next use of the slot creates a fresh one."""
        if slot.handle is handle:
            self._kill(handle)
            slot.handle = None
            slot.generation += 1

    async def _actor(self, pool: _Pool, slot: _Slot) -> Any:
        """The slot's opened actor, created on first use; a Verdict if that failed."""
        async with slot.ready:
            if slot.handle is not None:
                return slot.handle
            options: dict[str, Any] = {
                "max_concurrency": self.actor_concurrency,
                "scheduling_strategy": "SPREAD",
            }
            if self.actor_cpus is not None:
                options["num_cpus"] = self.actor_cpus
            if self.runtime_env is not None:
                options["runtime_env"] = self.runtime_env
            handle = self._remote.options(**options).remote(pool.opening)
            outcome = await self._await(handle.open.remote(), self.open_timeout_s)
            failure = outcome if isinstance(outcome, Verdict) else open_failure(outcome)
            if failure is not None:
                self._kill(handle)
                if failure.status is Status.TIMEOUT:
                    return Verdict.errored(f"open() took longer than {self.open_timeout_s}s")
                return failure
            slot.handle = handle
            return handle

    async def _run_on(
        self,
        pool: _Pool,
        slot: _Slot,
        timeout_s: float,
        request: Message,
    ) -> Verdict:
        for _attempt in range(2):
            handle = await self._actor(pool, slot)
            if isinstance(handle, Verdict):
                return handle
            generation = slot.generation
            outcome = await self._await(handle.verify.remote(request), timeout_s)
            if isinstance(outcome, dict):
                return read_verdict(outcome)
            assert isinstance(outcome, Verdict)
            if slot.generation != generation and outcome.status is Status.ERROR:
                continue  # our own kill (another sample's timeout) ended it: run it again
            if slot.handle is handle:
                self._kill(handle)
                slot.handle = None
                slot.generation += 1
            return outcome
        return Verdict.errored("verifier actor was restarted twice while this sample ran")

    async def _await(self, ref: Any, timeout_s: float) -> Any:
        """Await an ObjectRef; a timeout or a lost actor comes back as a Verdict."""
        ray = self._ray
        try:
            return await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout_s)
        except TimeoutError:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=False)
            return Verdict(status=Status.TIMEOUT, error=f"no verdict within {timeout_s}s")
        except ray.exceptions.RayActorError as exc:
            return Verdict.errored(f"verifier actor died: {_first_line(exc)}")
        except ray.exceptions.RayError as exc:
            return Verdict.errored(f"ray: {_first_line(exc)}")

    def _kill(self, handle: Any) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(handle, no_restart=True)

    async def stop(self) -> None:
        await self.stop_groups()
        if self._ray is None:
            return
        drains, self._drains = list(self._drains), set()
        await stop_batches(drains, [pool.queue for pool in self._pools.values()], "ray executor")
        self._openings, self._queued = {}, {}
        handles = [s.handle for p in self._pools.values() for s in p.slots if s.handle]
        self._pools = {}
        if handles:
            closing = [asyncio.wrap_future(h.close.remote().future()) for h in handles]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.gather(*closing, return_exceptions=True), CLOSE_TIMEOUT_S
                )
            for handle in handles:
                self._kill(handle)
        if self._owns_ray:
            shutdown_ray()
            self._owns_ray = False
        self._ray = None


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = " ".join(lines[:3])
    return f"{type(exc).__name__}: {text[:500]}"
