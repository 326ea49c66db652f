"""Group verifiers for core's tests: rank a task's completions by length."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rl_verifier import Completion, Task, Verdict, Verifier


class ShortestFirst(Verifier):
    """Rewards the shorter completions of a group: 1 for the shortest, 0 for the longest."""

    name = "shortest_first"
    group = True
    deterministic = False
    calls = 0

    async def verify_group(self, task: Task, completions: Sequence[Completion]) -> list[Verdict]:
        type(self).calls += 1
        await asyncio.sleep(0)
        lengths = [len(c.text()) for c in completions]
        order = sorted(set(lengths))
        top = max(len(order) - 1, 1)
        return [Verdict.ok(1 - order.index(n) / top, group_size=len(completions)) for n in lengths]
