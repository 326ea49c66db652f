"""The code of the file ``rlv new --standalone`` writes; ``standalone.py`` fills it in.

``$settings`` is the block of constants, ``$loss_inputs`` the datum's inputs for the loss.
"""

from string import Template

STANDALONE = Template('''\
"""$docstring
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Final, Literal

import tinker
from tinker import types

from rl_verifier import Score, Scorer, Status, Task
from rl_verifier.train import (
    Renderer,
    group_advantages,
    group_seed,
    is_degenerate,
    load_tasks,
    task_messages,
    tasks_for_step,
)

$settings

CHECKPOINT = re.compile(r".*/step-(\\d+)")  # the names save() gives, e.g. .../step-000010


@dataclass
class Rollout:
    """One sampled completion: the prompt's tokens, the sampled tokens and their logprobs."""

    task: Task
    prompt: list[int]
    tokens: list[int]
    logprobs: list[float]
    text: str


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--resume", metavar="CHECKPOINT", help="a tinker:// path this file printed at a save"
    )
    args = parser.parse_args()
    start = 0
    if args.resume:
        match = CHECKPOINT.fullmatch(args.resume)
        if match is None:
            raise SystemExit(f"error: {args.resume} is not a checkpoint this file saved")
        start = int(match.group(1))
    tasks = load_tasks(TASKS, relative_to=Path(__file__).parent)
    # The SDK reads TINKER_API_KEY and TINKER_BASE_URL (unset: the hosted Tinker API).
    service = tinker.ServiceClient()
    outcome: Literal["success", "errored", "interrupted"] = "errored"
    try:
        train(service, tasks, args.resume, start)
        outcome = "success"
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise
    finally:
        service.close(outcome).result(timeout=30)  # end the session now, not at its timeout


def train(
    service: tinker.ServiceClient, tasks: list[Task], resume: str | None, start: int
) -> None:
    """Steps ``start`` to STEPS, then one sample from the trained weights."""
    training = open_training(service, resume)
    if resume:
        print(f"resuming at step {start + 1} from {resume}", flush=True)
    # The model's own chat template, applied as rlv train applies it (prompt tokens, the
    # token that ends an assistant turn, sampled tokens back to text).
    renderer = Renderer(training.get_tokenizer())
    with Scorer(REWARD, VERIFIER_CONFIG) as scorer:
        for step in range(start, STEPS):
            begin = time.perf_counter()
            # save_weights_and_get_sampling_client: a sampler on the adapter's current
            # weights, so every step samples on-policy.
            sampler = training.save_weights_and_get_sampling_client().result()
            groups = sample_groups(sampler, renderer, tasks, step)
            scores = score_groups(scorer, groups)
            datums: list[types.Datum] = []
            trained = 0
            for group, group_scores in zip(groups, scores, strict=True):
                built = group_datums(group, group_scores)
                trained += bool(built)
                datums += built
            train_on(training, datums)
            done = step + 1
            if done % SAVE_EVERY == 0 or done == STEPS:
                save(training, done)
            flat = [score for group_scores in scores for score in group_scores]
            line = step_line(step, flat, trained, len(groups), time.perf_counter() - begin)
            print(line, flush=True)
    final_sample(training, renderer, tasks[0])


def open_training(service: tinker.ServiceClient, resume: str | None) -> tinker.TrainingClient:
    """A new LoRA adapter, or the one a checkpoint holds."""
    metadata = {"script": Path(__file__).name, "reward": REWARD}
    if resume:
        # create_training_client_from_state_with_optimizer: the adapter and Adam's state
        # exactly as save_state left them.
        return service.create_training_client_from_state_with_optimizer(
            resume, user_metadata=metadata
        ).result()
    # create_lora_training_client: a fresh LoRA adapter on the base model; only the adapter
    # trains.
    return service.create_lora_training_client(
        base_model=BASE_MODEL, rank=LORA_RANK, seed=SEED, user_metadata=metadata
    ).result()


def sampling_params(renderer: Renderer, seed: int) -> types.SamplingParams:
    """Sampling settings; the stop token ends the assistant's turn."""
    return types.SamplingParams(
        max_tokens=MAX_TOKENS, temperature=TEMPERATURE, stop=renderer.stop(), seed=seed
    )


def sample_groups(
    sampler: tinker.SamplingClient, renderer: Renderer, tasks: list[Task], step: int
) -> list[list[Rollout]]:
    """GROUP_SIZE completions of each of the step's tasks; all requests go out at once."""
    chosen = tasks_for_step(tasks, step, GROUPS_PER_STEP, SEED)  # rlv train's data order
    prompts = [renderer.prompt_tokens(task_messages(task)) for task in chosen]
    # sample: completions of one prompt, with the sampler's logprob of every sampled token.
    futures = [
        sampler.sample(
            prompt=types.ModelInput.from_ints(prompt),
            num_samples=GROUP_SIZE,
            sampling_params=sampling_params(renderer, group_seed(SEED, step, index)),
        )
        for index, prompt in enumerate(prompts)
    ]
    groups = []
    for task, prompt, future in zip(chosen, prompts, futures, strict=True):
        group = []
        for sequence in future.result().sequences:
            tokens = list(sequence.tokens)
            text = renderer.response_text(tokens)
            group.append(Rollout(task, prompt, tokens, list(sequence.logprobs or []), text))
        groups.append(group)
    return groups


def score_groups(scorer: Scorer, groups: list[list[Rollout]]) -> list[list[Score]]:
    """Score every completion of the step at once; each score has a status (see Status)."""
    pairs = [
        (rollout.task, [{"role": "assistant", "content": rollout.text}])
        for group in groups
        for rollout in group
    ]
    scores = iter(scorer.score_many(pairs))
    return [[next(scores) for _ in group] for group in groups]


def group_datums(group: list[Rollout], scores: list[Score]) -> list[types.Datum]:
    """The group's datums, or none when it carries no signal.

    timeout/error: the check did not finish, which says nothing about the completion, so
    the sample leaves the group and its baseline (it is not scored 0). invalid: the
    completion was unusable; it stays, with the verifier's penalty as its reward.
    """
    judged = [(r, s.reward) for r, s in zip(group, scores, strict=True) if s.status.judged]
    rewards = [reward for _, reward in judged]
    if len(judged) < 2 or is_degenerate(rewards):
        return []  # equal rewards: every advantage would be 0
    # Group-relative advantages: each reward against its group's (replace to experiment).
    advantages = group_advantages(rewards, ADVANTAGE)
    return [datum(rollout, a) for (rollout, _), a in zip(judged, advantages, strict=True)]


def datum(rollout: Rollout, advantage: float) -> types.Datum:
    """One sequence, prompt then completion: position i predicts token i + 1.

    Only sampled tokens carry the advantage; the prompt's targets carry 0 (no loss)."""
    tokens = rollout.prompt + rollout.tokens
    n = len(tokens) - 1
    prompt_targets = len(rollout.prompt) - 1
    logprobs = [0.0] * prompt_targets + rollout.logprobs
    advantages = [0.0] * prompt_targets + [advantage] * len(rollout.tokens)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
$loss_inputs
        },
    )


def train_on(training: tinker.TrainingClient, datums: list[types.Datum]) -> None:
    """One optimizer step on the step's datums (none: every group was skipped)."""
    if not datums:
        return
    # forward_backward: the loss on the datums and its gradients for the LoRA weights.
    backward = training.forward_backward(datums, LOSS, LOSS_CONFIG or None)
    # optim_step: one Adam step on the adapter with the gradients forward_backward left.
    optimized = training.optim_step(types.AdamParams(learning_rate=LEARNING_RATE))
    backward.result()
    optimized.result()


def save(training: tinker.TrainingClient, step: int) -> None:
    """A resumable checkpoint after ``step`` steps."""
    # save_state: the adapter's weights and Adam's state, on the server.
    path = training.save_state(name=f"step-{step:06d}").result().path
    print(f"checkpoint after step {step}: {path}", flush=True)


def step_line(step: int, scores: list[Score], trained: int, groups: int, seconds: float) -> str:
    """The step's log line; the mean reward is over judged samples (ok and invalid)."""
    rewards = [s.reward for s in scores if s.status.judged]
    reward = f"{fmean(rewards):.3f}" if rewards else "-"
    counts = Counter(s.status for s in scores)
    statuses = " ".join(f"{status.value} {counts[status]}" for status in Status)
    return (
        f"step {step + 1}/{STEPS}  reward {reward}  {statuses}  "
        f"trained on {trained}/{groups} groups  {seconds:.1f}s"
    )


def final_sample(training: tinker.TrainingClient, renderer: Renderer, task: Task) -> None:
    """One completion of ``task`` from the trained weights."""
    sampler = training.save_weights_and_get_sampling_client().result()
    prompt = types.ModelInput.from_ints(renderer.prompt_tokens(task_messages(task)))
    result = sampler.sample(
        prompt=prompt, num_samples=1, sampling_params=sampling_params(renderer, SEED)
    ).result()
    reply = renderer.response_text(list(result.sequences[0].tokens))
    print(f"final sample, task {task.id}: {reply!r}", flush=True)


if __name__ == "__main__":
    main()
''')
