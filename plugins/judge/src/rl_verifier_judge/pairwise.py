"""``judge_pair``: pairwise preference, asked in both orders. Against the task's
reference completion (``against = "reference"``), each completion gets two calls;
between the group's candidates (``against = "group"``), every ordered pair gets one.
The reward is the share of comparisons won (a tie counts half)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from itertools import permutations
from typing import Literal

from pydantic import Field, model_validator

from rl_verifier import Completion, Task, Verdict
from rl_verifier_judge.base import JudgeBase, failure, unparsed
from rl_verifier_judge.parsing import ParseProblem, parse_winner
from rl_verifier_judge.prompts import PromptProblem, Shown, pair_messages, shown
from rl_verifier_judge.replies import JudgeFailure, Usage
from rl_verifier_judge.settings import JudgeSettings

POINTS = {"A": 1.0, "B": 0.0, "tie": 0.5}  # for the response shown as A


class PairConfig(JudgeSettings):
    rubric: str = Field(
        default="helpful_harmless",
        description="Rubric text, or a built-in: correctness, instruction_following, "
        "helpful_harmless.",
    )
    against: Literal["reference", "group"] = Field(
        default="reference",
        description="Compare with the task's reference completion, or the group's "
        "candidates with each other (N*(N-1) calls).",
    )
    reference_key: str = Field(
        default="completion", description="Key of task.reference holding the reference text."
    )
    max_calls: int = Field(default=64, ge=2, description="Most judge calls for one group.")

    @model_validator(mode="after")
    def _winner_line_only(self) -> PairConfig:
        if self.format == "logprobs":
            raise ValueError("judge_pair reads a 'Winner:' line; format='logprobs' is for "
                             "judge and judge_rank")  # fmt: skip
        return self


class PairFailed(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.error)
        self.verdict = verdict


class JudgePairVerifier(JudgeBase[PairConfig]):
    """An LLM judge picks the better of two responses, each pair asked in both orders."""

    name = "judge_pair"
    description = "LLM judge: pairwise preference in both orders (vs a reference or the group)"
    Config = PairConfig
    group = True
    min_group_size = 1

    async def _winner(self, task: Task, first: Shown, second: Shown, usage: Usage) -> str:
        messages = pair_messages(task, first, second, self.config.rubric)
        try:
            reply = await self.client.chat(messages)
        except JudgeFailure as exc:
            usage.calls += 1
            raise PairFailed(failure(exc, usage)) from None
        usage.add(reply.usage)
        try:
            return parse_winner(reply.text)
        except ParseProblem as exc:
            raise PairFailed(unparsed(str(exc), reply.text, usage)) from None

    async def _both_orders(
        self, task: Task, candidate: Shown, other: Shown, usage: Usage
    ) -> tuple[float, bool]:
        """The candidate's points over both orders, and whether the orders agreed."""
        ahead, behind = await asyncio.gather(
            self._winner(task, candidate, other, usage), self._winner(task, other, candidate, usage)
        )
        first = POINTS[ahead]
        second = 1.0 - POINTS[behind]
        return (first + second) / 2, first == second

    async def verify_group(self, task: Task, completions: Sequence[Completion]) -> list[Verdict]:
        config = self.config
        size = len(completions)
        seen = [shown(c.text(), config.max_completion_chars) for c in completions]
        calls = 2 * size if config.against == "reference" else size * (size - 1)
        if calls > config.max_calls:
            return [
                Verdict.errored(f"{calls} judge calls needed, over max_calls={config.max_calls}")
            ] * size
        try:
            if config.against == "reference":
                return await self._against_reference(task, seen)
            if size < 2:
                message = "against='group' compares two or more completions of a task; got 1"
                return [Verdict.errored(message)]
            return await self._round_robin(task, seen)
        except PromptProblem as exc:
            return [Verdict.errored(str(exc))] * size

    async def _against_reference(self, task: Task, seen: list[Shown]) -> list[Verdict]:
        reference = task.reference.get(self.config.reference_key)
        if not isinstance(reference, str):
            problem = (
                f"judge_pair against='reference' needs the task's reference completion as "
                f"text in reference.{self.config.reference_key}; task '{task.id}' has none"
            )
            return [Verdict.errored(problem)] * len(seen)
        other = shown(reference, self.config.max_completion_chars)

        async def one(candidate: Shown) -> Verdict:
            usage = Usage()
            try:
                points, agreed = await self._both_orders(task, candidate, other, usage)
            except PairFailed as exc:
                return exc.verdict
            return Verdict.ok(
                points, judge=usage.as_info(), position_consistent=agreed, shown=candidate.info()
            )

        return list(await asyncio.gather(*(one(s) for s in seen)))

    async def _round_robin(self, task: Task, seen: list[Shown]) -> list[Verdict]:
        usage = Usage()
        pairs = list(permutations(range(len(seen)), 2))
        try:
            winners = await asyncio.gather(
                *(self._winner(task, seen[i], seen[j], usage) for i, j in pairs)
            )
        except PairFailed as exc:
            return [exc.verdict] * len(seen)
        points = [0.0] * len(seen)
        for (i, j), winner in zip(pairs, winners, strict=True):
            points[i] += POINTS[winner]
            points[j] += 1.0 - POINTS[winner]
        games = 2 * (len(seen) - 1)
        digest = hashlib.sha256(repr((task.id, [s.data for s in seen])).encode()).hexdigest()
        group = {"id": digest[:16], "size": len(seen), "judge": usage.as_info()}
        return [
            Verdict.ok(p / games, wins=p, games=games, shown=s.info(), group=group)
            for p, s in zip(points, seen, strict=True)
        ]
