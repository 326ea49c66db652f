"""The Ray executor's batch queue and batch messages, without Ray."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rl_verifier import Completion, Status, Task, Verdict, Verifier
from rl_verifier.execution.batch_calls import batch_request, batch_verdicts, verify_batch_answer
from rl_verifier.execution.ray_batches import BatchQueue, Item

TASK = Task(id="t", prompt="p", reference={"answer": "4"})


class Napper(Verifier):
    """Sleeps as many seconds as the completion says (in a thread: a plain verify)."""

    name = "napper"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        time.sleep(float(completion.text()))
        return Verdict.ok(1.0)


class AsyncNapper(Verifier):
    name = "async_napper"

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        await asyncio.sleep(float(completion.text()))
        return Verdict.ok(0.5)


class Judge(Verifier):
    """Reward 1 for "1", 0 for "0"; fails on anything else."""

    name = "judge"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        return Verdict.ok(float(int(completion.text())))


def items(count: int, timeout_s: float = 1.0) -> list[Item]:
    loop = asyncio.new_event_loop()
    made = [
        Item(TASK, Completion(task_id="t", completion=str(i)), timeout_s, loop.create_future())
        for i in range(count)
    ]
    loop.close()
    return made


def test_first_batch_is_one_sample_then_sizes_follow_the_cost() -> None:
    queue = BatchQueue(max_batch=100, target_s=0.01, lanes=1)
    queue.waiting.extend(items(1000))
    assert len(queue.take()) == 1
    queue.observe(1, 0.0001)  # 0.1 ms a sample: 100 fit in 10 ms
    assert [len(queue.take()) for _ in range(4)] == [2, 4, 8, 16]
    queue.peak = 100
    assert len(queue.take()) == 100
    queue.observe(10, 0.1)  # far slower now: the running cost rises, batches shrink
    assert len(queue.take()) < 100


def test_a_costly_verifier_goes_one_sample_at_a_time() -> None:
    queue = BatchQueue(max_batch=256, target_s=0.02, lanes=2)
    queue.waiting.extend(items(50))
    queue.observe(1, 0.5)
    queue.peak = 256
    assert {len(queue.take()) for _ in range(10)} == {1}


def test_batches_share_what_waits_between_lanes() -> None:
    queue = BatchQueue(max_batch=256, target_s=1.0, lanes=4)
    queue.waiting.extend(items(40))
    queue.observe(1, 1e-6)
    queue.peak = 256
    assert len(queue.take()) == 10


def test_solo_and_other_deadlines_end_a_batch() -> None:
    queue = BatchQueue(max_batch=256, target_s=1.0, lanes=1)
    first, second = items(3), items(2, timeout_s=5.0)
    queue.waiting.extend(first + second)
    queue.observe(1, 1e-6)
    queue.peak = 256
    assert queue.take() == first
    assert queue.take() == second
    queue.put_back(second, solo=True)
    queue.waiting.extend(first)
    assert queue.take() == [second[0]]
    assert queue.take() == [second[1]]
    assert queue.take() == first
    assert queue.take() == []


def test_put_back_keeps_order_and_skips_answered_samples() -> None:
    queue = BatchQueue(max_batch=8, target_s=1.0, lanes=1)
    batch = items(4)
    queue.waiting.extend(items(2))
    batch[1].settle(Verdict.ok(1.0))
    batch[1].settle(Verdict.ok(0.0))  # a second verdict is ignored
    assert batch[1].future.result().reward == 1.0
    queue.put_back(batch, restarted=True)
    assert list(queue.waiting)[:3] == [batch[0], batch[2], batch[3]]
    assert [item.restarts for item in (batch[0], batch[2], batch[3])] == [1, 1, 1]


def test_batch_request_sends_each_task_once_and_refuses_what_cannot_be_encoded() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(2000):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    bad = Task.model_construct(id="deep", prompt="p", reference=deep, metadata={})
    other = Task(id="u", prompt="q")
    samples = [(TASK, Completion(task_id="t", completion=str(i))) for i in range(3)]
    samples += [(bad, Completion(task_id="deep", completion="x")), (other, samples[0][1])]
    message, sent, failures = batch_request("key", samples)
    assert sent == [0, 1, 2, 4]
    assert list(failures) == [3] and "cannot send this sample" in (failures[3].error or "")
    assert [task["id"] for task in message["tasks"]] == ["t", "u"]
    assert [slot for slot, _ in message["samples"]] == [0, 0, 0, 1]
    chat = Completion(task_id="t", completion=[{"role": "assistant", "content": "4"}])
    for completion in (samples[0][1], chat):
        message, _, _ = batch_request("key", [(TASK, completion)])
        assert message["samples"][0][1] == completion.model_dump(mode="json")


def answer(verifier: Verifier, commands: list[str], timeout_s: float) -> dict[str, Any]:
    samples = [(TASK, Completion(task_id="t", completion=c)) for c in commands]
    message, _, _ = batch_request("key", samples)
    return asyncio.run(verify_batch_answer(verifier, message, timeout_s))


def test_a_sample_past_its_deadline_stops_the_batch_there() -> None:
    result = answer(Napper({}), ["0", "0", "3", "0"], timeout_s=0.3)
    assert result["timed_out"] == 2
    assert [v.reward for v in batch_verdicts(result)] == [1.0, 1.0]
    result = answer(AsyncNapper({}), ["0", "3", "0"], timeout_s=0.3)
    assert result["timed_out"] == 1
    assert [v.reward for v in batch_verdicts(result)] == [0.5]


def test_every_sample_of_a_batch_is_answered() -> None:
    result = answer(Napper({}), ["0", "oops", "0"], timeout_s=5.0)
    verdicts = batch_verdicts(result)
    assert result["timed_out"] is None
    assert [v.status for v in verdicts] == [Status.OK, Status.ERROR, Status.OK]
    assert "ValueError" in (verdicts[1].error or "")
    assert "Traceback" in verdicts[1].info["traceback"]


def test_a_batch_answer_sends_each_distinct_verdict_once() -> None:
    result = answer(Judge({}), ["1", "0", "1", "x", "0", "x"], timeout_s=5.0)
    verdicts = batch_verdicts(result)
    assert [v.reward for v in verdicts] == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert [v.status for v in verdicts].count(Status.ERROR) == 2
    assert len(result["answers"]) == 4  # two verdicts, and each error with its own trace
