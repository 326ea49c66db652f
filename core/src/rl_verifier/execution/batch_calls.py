"""Several samples in one worker call, each with its own deadline: the batch codec.

The engine's side packs samples into one ``verify_batch`` message (each distinct task sent
once, each sample a ``[task slot, completion]`` list: Ray's encoder pickles tuples one by
one); the worker's side judges them in order and answers with each distinct verdict once
(``answers``) and, per sample judged, the position of its answer there (``order``): a
cheap check's batch repeats a few verdicts, so the engine decodes a few. A sample past
``timeout_s`` stops the batch there: the answer names it (``timed_out``), the samples after
it are not run, and the caller retires the worker (the hung call may still be running) and
sends the rest again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from rl_verifier.base.contracts import Completion, Task, Verdict
from rl_verifier.base.verifier import Verifier
from rl_verifier.execution.verifier_calls import (
    Message,
    coerce_verdict,
    describe,
    error_answer,
    read_verdict,
)

# Requests (the engine's side) ------------------------------------------------------------


def batch_request(
    key: str, samples: Sequence[tuple[Task, Completion]]
) -> tuple[Message, list[int], dict[int, Verdict]]:
    """The message for ``samples``, the positions it carries (in order), and an ``error``
    verdict for each position that cannot be encoded (sent nowhere)."""
    tasks: list[Message] = []
    slots: dict[int, int] = {}
    items: list[list[int | Message]] = []
    sent: list[int] = []
    failures: dict[int, Verdict] = {}
    for position, (task, completion) in enumerate(samples):
        try:
            slot = slots.get(id(task))
            if slot is None:
                tasks.append(task.model_dump(mode="json"))
                slot = slots[id(task)] = len(tasks) - 1
            items.append([slot, _completion_data(completion)])
        except Exception as exc:  # noqa: BLE001 - a sample's own data, never a crash
            failures[position] = Verdict.errored(
                f"cannot send this sample to a worker: {describe(exc)}"
            )
            continue
        sent.append(position)
    return {"op": "verify_batch", "key": key, "tasks": tasks, "samples": items}, sent, failures


def _completion_data(completion: Completion) -> Message:
    """``completion.model_dump(mode="json")``; a plain-text one without pydantic's walk."""
    if type(completion.completion) is str:
        return {"task_id": completion.task_id, "completion": completion.completion}
    return completion.model_dump(mode="json")


# Answers (the worker's side) -------------------------------------------------------------


class _Answers:
    """Answers of a batch so far: each distinct one once, and one position per sample."""

    def __init__(self) -> None:
        self.distinct: list[Message] = []
        self.known: dict[str, int] = {}
        self.order: list[int] = []

    def add(self, answer: Message) -> None:
        key = answer.get("json")
        position = self.known.get(key) if key is not None else None
        if position is None:
            position = len(self.distinct)
            self.distinct.append(answer)
            if key is not None:
                self.known[key] = position
        self.order.append(position)

    def message(self, judged: int, timed_out: int | None, started: float) -> Message:
        """The answer for the first ``judged`` samples."""
        return {
            "answers": list(self.distinct),  # the thread of a cut batch may add one
            "order": self.order[:judged],
            "timed_out": timed_out,
            "busy_s": time.perf_counter() - started,
        }


class _Progress:
    """Which sample the judging thread is on, and since when; ``stop`` ends it early."""

    def __init__(self) -> None:
        self.current = (0, time.monotonic())
        self.stop = False


def _tasks(request: Message) -> list[Task | Exception]:
    tasks: list[Task | Exception] = []
    for data in request["tasks"]:
        try:
            tasks.append(Task.model_validate(data))
        except Exception as exc:  # noqa: BLE001 - reported on each of its samples
            tasks.append(exc)
    return tasks


def _judge(verifier: Verifier, task: Task | Exception, data: Message) -> Message:
    try:
        if isinstance(task, Exception):
            raise task
        verdict = coerce_verdict(verifier.verify(task, Completion.model_validate(data)))
    except Exception as exc:  # noqa: BLE001 - every fault goes back to the caller
        return error_answer(exc)
    return {"ok": True, "json": verdict.model_dump_json()}


async def _judge_async(verifier: Verifier, task: Task | Exception, data: Message) -> Message:
    try:
        if isinstance(task, Exception):
            raise task
        value: Any = await verifier.verify(task, Completion.model_validate(data))  # type: ignore[misc]
        verdict = coerce_verdict(value)
    except Exception as exc:  # noqa: BLE001 - every fault goes back to the caller
        return error_answer(exc)
    return {"ok": True, "json": verdict.model_dump_json()}


async def verify_batch_answer(verifier: Verifier, request: Message, timeout_s: float) -> Message:
    """Judge a ``verify_batch`` request in order: ``answers`` and ``order`` (read them with
    :func:`batch_verdicts`), ``timed_out`` (the position of a sample past ``timeout_s``, or
    None) and ``busy_s``.

    A plain ``verify`` runs in one thread for the whole batch, watched from the event loop,
    so a sample that never returns is still cut at its deadline."""
    started = time.perf_counter()
    tasks = _tasks(request)
    samples = request["samples"]
    answers = _Answers()
    if verifier.is_async():
        for index, (slot, data) in enumerate(samples):
            try:
                answer = await asyncio.wait_for(
                    _judge_async(verifier, tasks[slot], data), timeout_s
                )
            except TimeoutError:
                return answers.message(index, index, started)
            answers.add(answer)
        return answers.message(len(samples), None, started)
    progress = _Progress()

    def judge_all() -> None:
        for index, (slot, data) in enumerate(samples):
            if progress.stop:
                return
            progress.current = (index, time.monotonic())
            answers.add(_judge(verifier, tasks[slot], data))

    done = asyncio.get_running_loop().run_in_executor(None, judge_all)
    while not done.done():
        index, began = progress.current
        remaining = began + timeout_s - time.monotonic()
        if remaining <= 0:
            progress.stop = True
            return answers.message(index, index, started)
        await asyncio.wait({done}, timeout=remaining)
    done.result()
    return answers.message(len(samples), None, started)


# Reading answers (the engine's side) -----------------------------------------------------


def batch_verdicts(outcome: Message) -> list[Verdict]:
    """The verdict of each sample a batch answer judged, in order; samples with the same
    answer share one Verdict object (verdicts are never changed in place)."""
    distinct = [read_verdict(answer) for answer in outcome["answers"]]
    return [distinct[position] for position in outcome["order"]]
