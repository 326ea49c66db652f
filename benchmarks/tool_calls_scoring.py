"""Scoring throughput of the ``tool_calls`` verifier on 10k samples.

Scores a mix of tool-use trajectories (a legal call with a cited answer, call spam,
fabricated citations, OpenAI-format calls, bad JSON, plain answers) and BFCL outputs
two ways: a plain loop calling verify(), and the engine with the inline executor.
Everything runs in one process (under the GIL, one core at a time), so samples per CPU
second is the throughput per core; the target is at least 2,000. Wall-clock figures are
printed too: on a shared machine they also count time other processes held the core.

Run: .venv/bin/python benchmarks/tool_calls_scoring.py [--samples N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from rl_verifier import Completion, Task
from rl_verifier.base.reward import Reward
from rl_verifier.scoring.engine import Sample, make_executor, score_batch
from rl_verifier_tool_calls.tasks import eiffel_task, search_episode
from rl_verifier_tool_calls.verifier import ToolCallsVerifier

# These figures measure scoring itself: the verdict cache would answer repeats for free.
os.environ.setdefault("RLV_VERDICT_CACHE", "off")

TARGET = 2000.0


def trajectories() -> list[Any]:
    openai = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "Eiffel"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '[{"id": "r1", "text": "1889"}]'},
        {"role": "assistant", "content": "1889 [r1]"},
    ]
    return [
        search_episode(1, "1889 [r1]"),
        search_episode(3, "1889 [r1] [r2]", returned=("r1", "r2", "r3")),
        search_episode(6, "1889 [r1]"),
        search_episode(1, "1889 [r7]"),
        search_episode(1, "1889", arguments='{"query": "Eiffel"'),
        openai,
        "1889",
    ]


def bfcl_task() -> Task:
    fn = {
        "name": "add",
        "parameters": {
            "type": "dict",
            "properties": {"a": {"type": "integer"}, "b": {"type": "float"}},
            "required": ["a", "b"],
        },
    }
    reference = {
        "question": {"id": "parallel_0", "function": [fn]},
        "possible_answer": {
            "id": "parallel_0",
            "ground_truth": [{"add": {"a": [1], "b": [2.0]}}, {"add": {"a": [3], "b": [4.5]}}],
        },
    }
    return Task(id="parallel_0", prompt="Add.", reference=reference)


def make_batch(task: Task, outputs: list[Any], count: int) -> list[Sample]:
    return [
        Sample(task, Completion(task_id=task.id, completion=outputs[i % len(outputs)]), i)
        for i in range(count)
    ]


def direct(verifier: ToolCallsVerifier, samples: list[Sample]) -> None:
    for sample in samples:
        verifier.verify(sample.task, sample.completion)


def inline(verifier: ToolCallsVerifier, samples: list[Sample]) -> None:
    reward = Reward.of(verifier)
    result = asyncio.run(score_batch([(reward, s) for s in samples], make_executor("inline")))
    assert len(result.scores) == len(samples)


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (all threads of this process) of ``run()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    trajectory = make_batch(eiffel_task(), trajectories(), args.samples)
    bfcl_outputs = ["[add(a=3, b=4.5), add(a=1, b=2)]", "[add(a=1, b=2.0)]", "no call"]
    bfcl = make_batch(bfcl_task(), bfcl_outputs, args.samples)
    plain, bfcl_mode = ToolCallsVerifier(), ToolCallsVerifier({"mode": "bfcl"})
    direct(plain, trajectory[:50])  # warm caches (compiled schemas and patterns)
    rows = [
        ("trajectory: direct verify()", timed(lambda: direct(plain, trajectory))),
        ("trajectory: inline engine", timed(lambda: inline(plain, trajectory))),
        ("bfcl: direct verify()", timed(lambda: direct(bfcl_mode, bfcl))),
        ("bfcl: inline engine", timed(lambda: inline(bfcl_mode, bfcl))),
    ]
    print(f"{args.samples} samples each, one process; target {TARGET:,.0f} samples/s per core")
    header = f"{'way':<30} {'wall s':>8} {'CPU s':>8} {'per wall s':>11} {'per CPU s':>10}"
    print(header)
    for label, (wall, cpu) in rows:
        per_core = args.samples / max(cpu, 1e-9)
        verdict = "ok" if per_core >= TARGET else "BELOW TARGET"
        rate = args.samples / wall
        print(f"{label:<30} {wall:>8.3f} {cpu:>8.3f} {rate:>11,.0f} {per_core:>10,.0f}  {verdict}")


if __name__ == "__main__":
    main()
