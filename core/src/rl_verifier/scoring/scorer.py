"""``Scorer``: rl-verifier's scoring from Python, for any training loop.

A scorer binds a reward spec (``"0.8*pytest + 0.2*format"``) and its settings to one
executor that it opens on first use and keeps until ``close()`` (or the end of the
``with`` block, or interpreter exit). Its event loop runs on a thread of its own, so
``score``/``score_many`` may be called from any number of threads and
``ascore``/``ascore_many`` from any event loop. Every result is a ``Score`` with a
status; a check past its deadline comes back as ``timeout``, never as a wrong answer.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import weakref
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from rl_verifier.base.contracts import Completion, Score, Task
from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.base.reward import Reward
from rl_verifier.base.verifier import GroupOnly
from rl_verifier.execution.executors import Executor
from rl_verifier.scoring.background_loop import BackgroundLoop
from rl_verifier.scoring.engine import ExecutorKind, Sample, ScoringEngine, make_executor
from rl_verifier.scoring.resolve import reward_for

TaskLike = Task | Mapping[str, Any]
"""A ``Task``, or a mapping of its fields (``id`` may be left out)."""
CompletionLike = Completion | str | Sequence[Mapping[str, Any]] | Mapping[str, Any]
"""A ``Completion``, its text, a list of chat messages, or a mapping of its fields."""

STOP_TIMEOUT_S = 60.0
T = TypeVar("T")
_unnamed = itertools.count()


def as_task(value: TaskLike) -> Task:
    """A ``Task`` from a task or a mapping of its fields; a missing id is made up."""
    if isinstance(value, Task):
        return value
    if not isinstance(value, Mapping):
        raise UserError(f"a task must be a Task or a mapping of its fields, got {value!r}")
    fields = dict(value)
    fields.setdefault("id", f"task-{next(_unnamed)}")
    try:
        return Task.model_validate(fields)
    except ValidationError as exc:
        raise UserError(f"task: {'; '.join(validation_problems(exc))}") from None


def as_completion(value: CompletionLike, task: Task) -> Completion:
    """A ``Completion`` of ``task`` from text, chat messages or a mapping of its fields."""
    if isinstance(value, Completion):
        return value
    if isinstance(value, Mapping):
        fields = {"task_id": task.id, **value}
    else:
        fields = {"task_id": task.id, "completion": value}
    try:
        return Completion.model_validate(fields)
    except ValidationError as exc:
        raise UserError(f"completion: {'; '.join(validation_problems(exc))}") from None


@dataclass
class _Runtime:
    """What a started scorer owns: its loop thread, executor and engine."""

    pid: int
    loop: BackgroundLoop
    executor: Executor
    engine: ScoringEngine


class Scorer:
    """Scores completions with a reward spec, synchronously or asynchronously.

    ``spec`` is a verifier name or a reward spec; ``None`` uses each task's own
    ``verifier`` field (then ``settings`` are keyed by verifier name). For a composite
    spec ``settings`` are keyed by verifier name too: ``{"pytest": {"timeout_s": 10}}``.
    ``executor`` is ``"process"`` (killable worker processes: hard timeouts, the
    default), ``"inline"`` or ``"ray"``; ``workers`` sizes it (default: one per core).
    """

    def __init__(
        self,
        spec: str | None,
        settings: Mapping[str, Any] | None = None,
        *,
        executor: ExecutorKind = "process",
        workers: int | None = None,
        address: str | None = None,
    ) -> None:
        self.spec = spec or None
        self.settings = dict(settings or {})
        self.executor_kind: ExecutorKind = executor
        self.workers = workers
        self.address = address
        self._rewards: dict[str, Reward] = {}
        self._lock = threading.Lock()
        self._runtime: _Runtime | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._closed = False
        if self.spec is not None:
            self._rewards[self.spec] = reward_for(self.spec, self.settings)

    def __repr__(self) -> str:
        return f"Scorer({self.spec!r}, executor={self.executor_kind!r})"

    @property
    def reward(self) -> Reward | None:
        """The spec's ``Reward`` (its verifiers and provenance); ``None`` without a spec."""
        return self._rewards.get(self.spec) if self.spec else None

    def reward_of(self, task: Task) -> Reward:
        """The reward a task is scored with: the spec's, or the task's own verifier's."""
        name = self.spec or task.verifier
        if not name:
            raise UserError(f"task '{task.id}' names no verifier and the scorer has no spec")
        with self._lock:
            if name not in self._rewards:
                self._rewards[name] = reward_for(name, self.settings.get(name, {}))
            return self._rewards[name]

    # -- scoring -------------------------------------------------------------------

    def score(self, task: TaskLike, completion: CompletionLike) -> Score:
        """Score one completion; blocks until its verdict (or its deadline). A reward
        with a group verifier refuses: use ``score_group``."""
        reward, sample = self._job(task, completion, 0)
        alone(reward)
        runtime = self._start()
        return runtime.loop.run(runtime.engine.score_one(reward, sample))

    def score_group(self, task: TaskLike, completions: Iterable[CompletionLike]) -> list[Score]:
        """Score a task's completions together (an RL group): group verifiers judge them
        all in one go, the others one by one. Scores come back in input order."""
        reward, samples = self._group(task, completions)
        runtime = self._start()
        return runtime.loop.run(runtime.engine.score_group(reward, samples))

    async def ascore_group(
        self, task: TaskLike, completions: Iterable[CompletionLike]
    ) -> list[Score]:
        """``score_group`` for async code; safe on any event loop."""
        reward, samples = self._group(task, completions)
        runtime = self._start()
        return await self._await(runtime, runtime.engine.score_group(reward, samples))

    def score_many(self, pairs: Iterable[tuple[TaskLike, CompletionLike]]) -> list[Score]:
        """Score (task, completion) pairs concurrently; scores come back in input order.
        Pairs of one task form its group for group verifiers."""
        jobs = self._jobs(pairs)
        runtime = self._start()
        return runtime.loop.run(runtime.engine.score(jobs))

    async def ascore(self, task: TaskLike, completion: CompletionLike) -> Score:
        """``score`` for async code; safe on any event loop."""
        reward, sample = self._job(task, completion, 0)
        alone(reward)
        runtime = self._start()
        return await self._await(runtime, runtime.engine.score_one(reward, sample))

    async def ascore_many(self, pairs: Iterable[tuple[TaskLike, CompletionLike]]) -> list[Score]:
        """``score_many`` for async code; safe on any event loop."""
        jobs = self._jobs(pairs)
        runtime = self._start()
        return await self._await(runtime, runtime.engine.score(jobs))

    @staticmethod
    async def _await(runtime: _Runtime, coro: Coroutine[Any, Any, T]) -> T:
        if runtime.loop.on_loop_thread:
            return await coro
        return await asyncio.wrap_future(runtime.loop.submit(coro))

    def _job(self, task: TaskLike, completion: CompletionLike, index: int) -> tuple[Reward, Sample]:
        parsed = as_task(task)
        return self.reward_of(parsed), Sample(parsed, as_completion(completion, parsed), index)

    def _group(
        self, task: TaskLike, completions: Iterable[CompletionLike]
    ) -> tuple[Reward, list[Sample]]:
        parsed = as_task(task)
        samples = [Sample(parsed, as_completion(c, parsed), i) for i, c in enumerate(completions)]
        return self.reward_of(parsed), samples

    def _jobs(
        self, pairs: Iterable[tuple[TaskLike, CompletionLike]]
    ) -> list[tuple[Reward, Sample]]:
        seen: dict[str, int] = {}
        jobs = []
        for task, completion in pairs:
            parsed = as_task(task)
            index = seen.get(parsed.id, 0)
            seen[parsed.id] = index + 1
            jobs.append(self._job(parsed, completion, index))
        return jobs

    # -- lifetime ------------------------------------------------------------------

    def _start(self) -> _Runtime:
        with self._lock:
            if self._closed:
                raise UserError("this Scorer is closed; make a new one")
            runtime = self._runtime
            if runtime is not None and runtime.pid == os.getpid():
                return runtime
            # First use, or first use in a forked child: the parent's loop thread and
            # workers do not exist here, so this process gets its own.
            loop = BackgroundLoop(f"rl-verifier scorer {self.spec or 'per-task'}")
            executor = make_executor(self.executor_kind, self.workers, self.address)
            try:
                loop.run(executor.start())
            except BaseException:
                loop.stop()
                raise
            engine = ScoringEngine(executor, keep_scores=False)
            self._runtime = _Runtime(os.getpid(), loop, executor, engine)
            # Runs at close(), when the scorer is garbage-collected, or at exit.
            if self._finalizer is not None:
                self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop, self._runtime)
            return self._runtime

    def close(self) -> None:
        """Stop the executor (its worker processes and opened verifiers) and the loop
        thread. Safe to call twice; the scorer cannot be used afterwards."""
        with self._lock:
            self._closed = True
            self._runtime = None
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Scorer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    # A scorer travels (Ray, multiprocessing) as its configuration and starts afresh.
    def __getstate__(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "settings": self.settings,
            "executor": self.executor_kind,
            "workers": self.workers,
            "address": self.address,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        spec, settings = state.pop("spec"), state.pop("settings")
        self.__init__(spec, settings, **state)  # type: ignore[misc]


def alone(reward: Reward) -> None:
    """Refuse to score one completion alone with a group verifier."""
    for name in reward.groups:
        verifier = reward.verifiers[name]
        if verifier.min_group_size > 1:
            raise GroupOnly(verifier.name, 1, verifier.min_group_size)


def _stop(runtime: _Runtime) -> None:
    """Close a runtime's executor and loop; a forked child leaves its parent's alone."""
    if runtime.pid != os.getpid():
        return
    try:
        if not runtime.loop.on_loop_thread:
            runtime.loop.run(runtime.executor.stop(), STOP_TIMEOUT_S)
    finally:
        runtime.loop.stop(STOP_TIMEOUT_S)
