"""What ships with the core: the exact-match and format verifiers, their example task
sets, the built-in losses and the reward server's two wire protocols."""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import Field

from rl_verifier.base.contracts import Completion, Task, Verdict
from rl_verifier.base.loss import BUILTIN_LOSSES
from rl_verifier.base.verifier import Regex, Verifier, VerifierConfig
from rl_verifier.discovery.hookspecs import (
    LossRegistrar,
    RewardProtocolRegistrar,
    TaskSetRegistrar,
    VerifierRegistrar,
    hookimpl,
)
from rl_verifier.parsing.answers import normalise_answer, reference_answers


class ExactMatchConfig(VerifierConfig):
    answer_pattern: Regex = Field(
        default=r"<answer>(.*?)</answer>",
        description="Regex whose first group is the answer; the whole text when it has no match.",
    )
    require_pattern: bool = Field(
        default=False, description="Treat a completion without the pattern as invalid."
    )
    normalise: bool = Field(default=True, description="Compare after SQuAD-style normalisation.")


class ExactMatch(Verifier[ExactMatchConfig]):
    """Reward 1 when the answer equals one of reference.answers (or reference.answer)."""

    name = "exact_match"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        config = self.config
        gold = reference_answers(task.reference)
        if not gold:
            return Verdict.errored("task reference has no 'answer' or 'answers'")
        text = completion.text()
        matches = re.findall(config.answer_pattern, text, flags=re.DOTALL)
        if matches:
            last = matches[-1]
            answer = last[0] if isinstance(last, tuple) else last
        elif config.require_pattern:
            return Verdict.invalid("no answer in the expected format")
        else:
            answer = text
        clean: Callable[[str], str] = normalise_answer if config.normalise else str.strip
        hit = clean(answer) in {clean(g) for g in gold}
        return Verdict.ok(1.0 if hit else 0.0, answer=answer)


class FormatConfig(VerifierConfig):
    pattern: Regex = Field(
        default=r"(?s)^.*<answer>.+?</answer>\s*$",
        description="Regex the whole completion must match (re.fullmatch).",
    )


class FormatGate(Verifier[FormatConfig]):
    """Reward 1 when the completion matches the required format, else 0."""

    name = "format"

    def verify(self, task: Task, completion: Completion) -> Verdict:
        config = self.config
        pattern = task.reference.get("format_pattern", config.pattern)
        matched = re.fullmatch(pattern, completion.text()) is not None
        return Verdict.ok(1.0 if matched else 0.0)


@hookimpl
def register_verifiers(register: VerifierRegistrar) -> None:
    register(ExactMatch)
    register(FormatGate)


def arithmetic_tasks(count: int = 32) -> list[Task]:
    """Small sums with their answers: an example task set for exact_match and format."""
    tasks = []
    for i in range(count):
        a, b = (i * 7) % 10, (i * 3 + 1) % 10
        prompt = f"What is {a} + {b}? Reply with the number inside <answer></answer>."
        tasks.append(Task(id=f"sum-{i}", prompt=prompt, reference={"answer": str(a + b)}))
    return tasks


@hookimpl
def register_task_sets(register: TaskSetRegistrar) -> None:
    register("exact_match-example", arithmetic_tasks)
    register("format-example", arithmetic_tasks)


@hookimpl
def register_losses(register: LossRegistrar) -> None:
    for loss in BUILTIN_LOSSES:
        register(loss)


@hookimpl
def register_reward_protocols(register: RewardProtocolRegistrar) -> None:
    from rl_verifier.reward_server.protocols import BUILTIN_PROTOCOLS

    for protocol in BUILTIN_PROTOCOLS:
        register(protocol)
