"""``judge_rank``: RULER-style group scoring. One call shows the judge all N completions
of a task, shuffled under neutral labels, and reads back a score for each; the rewards
are those scores on [0, 1]. An optional second pass shows them in reverse order: the
scores are averaged and the share of pairs the passes order differently is recorded.

With ``format='logprobs'`` there is one call per completion instead: each shows the whole
group (same shuffled labels) and asks for one score digit for that completion, read from
the judge's token probabilities; a completion whose call fails or whose digits hold too
little probability is ``error`` alone, the others keep their scores."""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from pydantic import Field

from rl_verifier import Completion, Status, Task, Verdict
from rl_verifier_judge.base import JudgeBase, clipped, failure, unparsed
from rl_verifier_judge.digit_prompts import digit_ranking_messages
from rl_verifier_judge.parsing import ParseProblem, parse_label_scores
from rl_verifier_judge.prompts import PromptProblem, Shown, label, ranking_messages, shown
from rl_verifier_judge.replies import JudgeFailure, Usage
from rl_verifier_judge.settings import JudgeSettings


class RankConfig(JudgeSettings):
    rubric: str = Field(
        default="helpful_harmless",
        description="Rubric text, or a built-in: correctness, instruction_following, "
        "helpful_harmless.",
    )
    reverse_pass: bool = Field(
        default=False, description="Ask again in reverse order and average (position bias)."
    )
    max_group_size: int = Field(default=32, ge=2, description="Largest group shown at once.")


def display_order(task: Task, texts: Sequence[str]) -> list[int]:
    """A shuffle seeded by the group's content: the same group (in any input order) is
    shown the same way, so its judge call is the same call, and cached."""
    ranked = sorted(range(len(texts)), key=lambda i: (texts[i], i))
    digest = hashlib.sha256(repr((task.id, sorted(texts))).encode()).digest()
    random.Random(digest).shuffle(ranked)
    return ranked


def disagreement(first: Sequence[float], second: Sequence[float]) -> float:
    """Share of pairs the two passes order differently (a tie against an order counts)."""
    pairs = list(combinations(range(len(first)), 2))
    if not pairs:
        return 0.0

    def sign(x: float) -> int:
        return (x > 0) - (x < 0)

    differ = sum(sign(first[i] - first[j]) != sign(second[i] - second[j]) for i, j in pairs)
    return differ / len(pairs)


class JudgeRankVerifier(JudgeBase[RankConfig]):
    """An LLM judge scores a task's completions side by side (RULER-style); no labels needed."""

    name = "judge_rank"
    description = "LLM judge ranking a group's completions in one call (RULER-style)"
    Config = RankConfig
    group = True
    min_group_size = 2

    async def _pass(
        self, task: Task, seen: list[Shown], order: list[int], usage: Usage
    ) -> tuple[list[float], str]:
        """Scores by input position from one call showing ``order``; the reply text."""
        config = self.config
        messages = ranking_messages(task, [seen[i] for i in order], config.rubric, config.scale)
        reply = await self.client.chat(messages)
        usage.add(reply.usage)
        labels = [label(p) for p in range(len(order))]
        try:
            by_label = parse_label_scores(reply.text, labels, config.scale)
        except ParseProblem as exc:
            raise Unparsed(str(exc), reply.text) from None
        scores = [0.0] * len(order)
        for position, index in enumerate(order):
            scores[index] = by_label[labels[position]]
        return scores, reply.text

    async def _digit(
        self, task: Task, seen: list[Shown], order: list[int], position: int
    ) -> Verdict:
        """One completion's verdict: the group shown in ``order``, scored at ``position``."""
        config = self.config
        group = [seen[i] for i in order]
        messages = digit_ranking_messages(task, group, position, config.rubric, config.scale)
        usage = Usage()
        try:
            reply = await self.client.chat(messages)
        except JudgeFailure as exc:
            usage.calls = 1
            return failure(exc, usage)
        usage.add(reply.usage)
        return self.from_logprobs(reply, usage)

    async def _digit_group(
        self, task: Task, seen: list[Shown], order: list[int], group: dict[str, object]
    ) -> list[Verdict]:
        """``format='logprobs'``: a call per completion (and per pass); verdicts by input
        position, each ``ok`` or failed on its own."""
        orders = [order, order[::-1]] if self.config.reverse_pass else [order]
        calls = [
            self._digit(task, seen, shown_order, shown_order.index(index))
            for shown_order in orders
            for index in range(len(seen))
        ]
        try:
            found = await asyncio.gather(*calls)
        except PromptProblem as exc:
            return [Verdict.errored(str(exc))] * len(seen)
        usage = Usage()
        for verdict in found:
            usage.add(Usage(**verdict.info["judge"]))
        group["judge"] = usage.as_info()
        passes = [found[i : i + len(seen)] for i in range(0, len(found), len(seen))]
        both_ok = [i for i in range(len(seen)) if all(p[i].status is Status.OK for p in passes)]
        if len(passes) == 2 and len(both_ok) >= 2:
            first = [passes[0][i].info["score"] for i in both_ok]
            second = [passes[1][i].info["score"] for i in both_ok]
            group["disagreement"] = disagreement(first, second)
        verdicts = []
        for index in range(len(seen)):
            each = [p[index] for p in passes]
            bad = next((v for v in each if v.status is not Status.OK), None)
            common: dict[str, Any] = {
                "label": label(order.index(index)),
                "shown": seen[index].info(),
            }
            if bad is not None:
                verdicts.append(
                    bad.model_copy(update={"info": {**bad.info, **common, "group": group}})
                )
                continue
            scores = [float(v.info["score"]) for v in each]
            score = sum(scores) / len(scores)
            verdicts.append(
                Verdict.ok(
                    self.normalise(score),
                    score=score,
                    pass_scores=scores,
                    score_mass=[v.info["score_mass"] for v in each],
                    score_distribution=[v.info["score_distribution"] for v in each],
                    judge_text=[v.info["judge_text"] for v in each],
                    label=common["label"],
                    shown=common["shown"],
                    group=group,
                )
            )
        return verdicts

    async def verify_group(self, task: Task, completions: Sequence[Completion]) -> list[Verdict]:
        config = self.config
        size = len(completions)
        if size > config.max_group_size:
            problem = f"group of {size} is larger than max_group_size={config.max_group_size}"
            return [Verdict.errored(problem)] * size
        texts = [c.text() for c in completions]
        seen = [shown(t, config.max_completion_chars) for t in texts]
        order = display_order(task, texts)
        group_id = hashlib.sha256(repr((task.id, texts)).encode()).hexdigest()[:16]
        group: dict[str, object] = {"id": group_id, "size": size, "order": order}
        if config.format == "logprobs":
            return await self._digit_group(task, seen, order, group)
        usage = Usage()
        passes: list[list[float]] = []
        replies: list[str] = []
        try:
            for shown_order in [order, order[::-1]] if config.reverse_pass else [order]:
                scores, text = await self._pass(task, seen, shown_order, usage)
                passes.append(scores)
                replies.append(text)
        except PromptProblem as exc:
            return [Verdict.errored(str(exc))] * size
        except JudgeFailure as exc:
            usage.calls += 1
            return [failure(exc, usage, group={**group, "judge": usage.as_info()})] * size
        except Unparsed as exc:
            group["judge"] = usage.as_info()
            return [unparsed(exc.reason, exc.text, usage, group=group)] * size
        group["judge"] = usage.as_info()
        group["judge_text"] = [clipped(t) for t in replies]
        if len(passes) == 2:
            group["disagreement"] = disagreement(passes[0], passes[1])
        verdicts = []
        for index in range(size):
            each = [p[index] for p in passes]
            score = sum(each) / len(each)
            verdicts.append(
                Verdict.ok(
                    self.normalise(score),
                    score=score,
                    pass_scores=each,
                    label=label(order.index(index)),
                    shown=seen[index].info(),
                    group=group,
                )
            )
        return verdicts


class Unparsed(Exception):
    def __init__(self, reason: str, text: str) -> None:
        super().__init__(reason)
        self.reason, self.text = reason, text
