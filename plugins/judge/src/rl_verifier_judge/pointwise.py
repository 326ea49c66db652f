"""``judge``: one call per completion, scored against a rubric on a scale."""

from __future__ import annotations

from pydantic import Field

from rl_verifier import Completion, Task, Verdict
from rl_verifier_judge.base import JudgeBase, clipped, failure, unparsed
from rl_verifier_judge.digit_prompts import digit_pointwise_messages
from rl_verifier_judge.parsing import ParseProblem, parse_score
from rl_verifier_judge.prompts import PromptProblem, pointwise_messages, shown
from rl_verifier_judge.replies import JudgeFailure, Usage
from rl_verifier_judge.settings import JudgeSettings


class JudgeConfig(JudgeSettings):
    rubric: str = Field(
        default="correctness",
        description="Rubric text, or a built-in: correctness (needs the task's reference "
        "answer), instruction_following, helpful_harmless.",
    )


class JudgeVerifier(JudgeBase[JudgeConfig]):
    """An LLM judge scores each completion against a rubric; reward = score on [0, 1]."""

    name = "judge"
    Config = JudgeConfig
    description = "LLM judge: a rubric score per completion (OpenAI-compatible endpoint)"

    async def verify(self, task: Task, completion: Completion) -> Verdict:
        text = completion.text()
        if not text.strip():
            return Verdict.invalid("empty completion")
        config = self.config
        seen = shown(text, config.max_completion_chars)
        try:
            if config.format == "logprobs":
                messages = digit_pointwise_messages(task, seen, config.rubric, config.scale)
            else:
                messages = pointwise_messages(
                    task, seen, config.rubric, config.scale, config.format
                )
        except PromptProblem as exc:
            return Verdict.errored(str(exc))
        usage = Usage()
        try:
            reply = await self.client.chat(messages)
        except JudgeFailure as exc:
            usage.calls = 1
            return failure(exc, usage, shown=seen.info())
        usage.add(reply.usage)
        if config.format == "logprobs":
            return self.from_logprobs(reply, usage, shown=seen.info())
        try:
            score = parse_score(reply.text, config.scale, config.format)
        except ParseProblem as exc:
            return unparsed(str(exc), reply.text, usage, shown=seen.info())
        return Verdict.ok(
            self.normalise(score),
            score=score,
            judge_text=clipped(reply.text),
            judge=usage.as_info(),
            shown=seen.info(),
        )
