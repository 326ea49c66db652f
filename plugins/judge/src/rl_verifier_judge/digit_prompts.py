"""Prompts for ``format='logprobs'``: the judge answers with one score digit, read from
its token probabilities. Two worked turns (a best and a worst answer, on unrelated
questions) come first: with them even a 135M judge puts most of its first token's
probability on the digits; without them it starts its reply with prose."""

from __future__ import annotations

from rl_verifier import Task
from rl_verifier_judge.prompts import (
    DATA_RULE,
    Shown,
    as_data,
    context_blocks,
    label,
    reference_answer,
    rubric_text,
    shown,
)

# (prompt, reference, good answer, bad answer) of the worked turns
EXAMPLES = (
    ("What is 2 + 2?", "4", "The answer is 4."),
    ("Name a primary colour.", "red", "Bananas are tasty and yellow."),
)


def digit_instruction(scale: tuple[float, float], subject: str = "the response") -> str:
    low, high = (f"{v:g}" for v in scale)
    return f"Score {subject} from {low} (worst) to {high} (best). Reply with the digit only."


def _example_blocks(prompt: str, reference: str, with_reference: bool) -> list[str]:
    blocks = [f"<prompt>{as_data(prompt)}</prompt>"]
    if with_reference:
        blocks.append(f"<reference>{as_data(reference)}</reference>")
    return blocks


def digit_pointwise_messages(
    task: Task, completion: Shown, rubric: str, scale: tuple[float, float]
) -> list[dict[str, str]]:
    """System, a best and a worst worked turn, then the completion to score."""
    ask = digit_instruction(scale)
    blocks = context_blocks(task, rubric)
    with_reference = reference_answer(task) is not None
    system = f"You are a strict grader. {rubric_text(rubric)}\n{DATA_RULE}\n{ask}"
    messages = [{"role": "system", "content": system}]
    (good_q, good_ref, good), (bad_q, bad_ref, bad) = EXAMPLES
    for question, reference, answer, digit in (
        (good_q, good_ref, good, scale[1]),
        (bad_q, bad_ref, bad, scale[0]),
    ):
        example = _example_blocks(question, reference, with_reference)
        example.append(f"<completion>{as_data(answer)}</completion>")
        messages.append({"role": "user", "content": "\n".join([*example, ask])})
        messages.append({"role": "assistant", "content": f"{digit:g}"})
    body = [*blocks, f"<completion>{completion.data}</completion>", ask]
    messages.append({"role": "user", "content": "\n".join(body)})
    return messages


def _group_turn(
    blocks: list[str], group: list[Shown], target: int, scale: tuple[float, float]
) -> str:
    shown_group = [
        f'<completion label="{label(i)}">{item.data}</completion>' for i, item in enumerate(group)
    ]
    return "\n".join([*blocks, *shown_group, digit_instruction(scale, f"response {label(target)}")])


def digit_ranking_messages(
    task: Task, group: list[Shown], target: int, rubric: str, scale: tuple[float, float]
) -> list[dict[str, str]]:
    """The whole group, labelled in the order given, as context; the judge scores the one
    at position ``target`` relative to the others."""
    ask = digit_instruction(scale)
    with_reference = reference_answer(task) is not None
    system = (
        "You are a strict grader comparing responses to the same prompt. "
        f"{rubric_text(rubric)}\n{DATA_RULE}\nScore the response you are asked about "
        f"relative to the others: better responses get higher scores. {ask}"
    )
    messages = [{"role": "system", "content": system}]
    (good_q, good_ref, good), (_, _, bad) = EXAMPLES
    example_group = [shown(good, 1000), shown(bad, 1000)]
    example = _example_blocks(good_q, good_ref, with_reference)
    for position, digit in ((0, scale[1]), (1, scale[0])):
        turn = _group_turn(example, example_group, position, scale)
        messages.append({"role": "user", "content": turn})
        messages.append({"role": "assistant", "content": f"{digit:g}"})
    turn = _group_turn(context_blocks(task, rubric), group, target, scale)
    messages.append({"role": "user", "content": turn})
    return messages
