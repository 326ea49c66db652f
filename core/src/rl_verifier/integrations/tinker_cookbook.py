"""tinker-cookbook: rl-verifier tasks and rewards as the cookbook's RL types.

``VerifierDatasetBuilder`` (a ``chz`` ``RLDatasetBuilder``) gives the cookbook's
``rl.train.Config`` a dataset of ``VerifierGroupBuilder`` groups, each of
``VerifierEnv`` single-turn environments that render a task's prompt, parse the sampled
response and score it with a ``Scorer``.

Statuses: ``ok`` and ``invalid`` are rewards as scored (``invalid`` with the verifier's
penalty). ``timeout`` and ``error`` are not judgements of the model, so the
transition carries the cookbook's ``parse_error_masked`` metric, which makes
``trajectory_to_data`` give its tokens loss mask 0 and advantage 0; and its total reward
is the mean of the judged rewards in its group, so the group's centering (and
``remove_constant_reward_groups``) sees the others unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast, get_args

import chz
import tinker
from tinker_cookbook import renderers
from tinker_cookbook.completers import StopCondition
from tinker_cookbook.rl.types import (
    PARSE_ERROR_MASKED_METRIC_KEY,
    Action,
    ActionExtra,
    Env,
    EnvGroupBuilder,
    Metrics,
    Observation,
    RLDataset,
    RLDatasetBuilder,
    StepResult,
    Trajectory,
)
from tinker_cookbook.tokenizer_utils import get_tokenizer

from rl_verifier.base.contracts import Score, Task, content_text
from rl_verifier.base.errors import UserError
from rl_verifier.integrations.common import batch_figures, judged_mean
from rl_verifier.scoring.engine import ExecutorKind
from rl_verifier.scoring.resolve import load_task_source
from rl_verifier.scoring.scorer import Scorer


def task_messages(task: Task, system_prompt: str | None = None) -> list[renderers.Message]:
    """The task's prompt as cookbook messages (a string prompt is one user turn)."""
    messages: list[renderers.Message] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    if isinstance(task.prompt, str):
        messages.append({"role": "user", "content": task.prompt})
    else:
        messages.extend({"role": m.role, "content": content_text(m.content)} for m in task.prompt)
    return messages


def score_metrics(score: Score) -> Metrics:
    """A transition's metrics: status one-hots, components, and the mask when unjudged."""
    metrics: Metrics = {f"rlv/{k}": v for k, v in batch_figures([score]).items()}
    if not score.status.judged:
        metrics[PARSE_ERROR_MASKED_METRIC_KEY] = 1.0
    return metrics


class VerifierEnv(Env):
    """One single-turn episode: the task's prompt, one response, its score."""

    def __init__(
        self,
        task: Task,
        scorer: Scorer,
        renderer: renderers.Renderer,
        system_prompt: str | None = None,
    ) -> None:
        self.task = task
        self.scorer = scorer
        self.renderer = renderer
        self.system_prompt = system_prompt
        self.score: Score | None = None
        self.reply: str | None = None  # kept for the group's score under a group verifier

    @property
    def stop_condition(self) -> StopCondition:
        return self.renderer.get_stop_sequences()

    async def initial_observation(self) -> tuple[Observation, StopCondition]:
        messages = task_messages(self.task, self.system_prompt)
        return self.renderer.build_generation_prompt(messages), self.stop_condition

    async def step(self, action: Action, *, extra: ActionExtra | None = None) -> StepResult:
        message, _termination = self.renderer.parse_response(action)
        text = renderers.get_text_content(message)
        if self.scorer.reward_of(self.task).groups:
            # A group verifier judges the group's replies together: compute_group_rewards.
            self.reply = text
            return StepResult(
                reward=0.0,
                episode_done=True,
                next_observation=tinker.ModelInput.empty(),
                next_stop_condition=self.stop_condition,
                metrics={},
            )
        self.score = await self.scorer.ascore(self.task, [{"role": "assistant", "content": text}])
        return StepResult(
            reward=self.score.reward if self.score.status.judged else 0.0,
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.stop_condition,
            metrics=score_metrics(self.score),
            logs={"rlv_status": self.score.status.value, "rlv_error": self.score.error or ""},
        )


class VerifierGroupBuilder(EnvGroupBuilder):
    """``group_size`` environments for one task (picklable: a scorer travels as its
    configuration)."""

    def __init__(
        self,
        task: Task,
        scorer: Scorer,
        renderer: renderers.Renderer,
        group_size: int,
        system_prompt: str | None = None,
        tags: Sequence[str] = ("rl_verifier",),
    ) -> None:
        self.task = task
        self.scorer = scorer
        self.renderer = renderer
        self.group_size = group_size
        self.system_prompt = system_prompt
        self.tags = list(tags)

    async def make_envs(self) -> Sequence[Env]:
        return [
            VerifierEnv(self.task, self.scorer, self.renderer, self.system_prompt)
            for _ in range(self.group_size)
        ]

    async def compute_group_rewards(
        self, trajectory_group: list[Trajectory], env_group: Sequence[Env]
    ) -> list[tuple[float, Metrics]]:
        """A failed check's total reward becomes the mean of the judged ones (0 when
        none was judged): it adds nothing to the group's centering. Under a group
        verifier the group's replies are scored here, together."""
        envs = [env for env in env_group if isinstance(env, VerifierEnv)]
        if envs and len(envs) == len(env_group) and all(e.reply is not None for e in envs):
            replies = [[{"role": "assistant", "content": e.reply}] for e in envs]
            for env, score in zip(
                envs, await self.scorer.ascore_group(self.task, replies), strict=True
            ):
                env.score = score
            judged = [e.score.reward for e in envs if e.score and e.score.status.judged]
            fill = sum(judged) / len(judged) if judged else 0.0
            return [
                (e.score.reward if e.score.status.judged else fill, score_metrics(e.score))
                for e in envs
                if e.score is not None
            ]
        scores = [env.score if isinstance(env, VerifierEnv) else None for env in env_group]
        fill = judged_mean(scores)
        return [(0.0 if s is not None and s.status.judged else fill, {}) for s in scores]

    def logging_tags(self) -> list[str]:
        return self.tags


class VerifierDataset(RLDataset):
    """Batches of ``batch_size`` task groups, in task order."""

    def __init__(
        self,
        tasks: Sequence[Task],
        scorer: Scorer,
        renderer: renderers.Renderer,
        batch_size: int,
        group_size: int,
        system_prompt: str | None = None,
    ) -> None:
        self.tasks = list(tasks)
        self.scorer = scorer
        self.renderer = renderer
        self.batch_size = batch_size
        self.group_size = group_size
        self.system_prompt = system_prompt

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        start = index * self.batch_size
        return [
            VerifierGroupBuilder(
                task, self.scorer, self.renderer, self.group_size, self.system_prompt
            )
            for task in self.tasks[start : start + self.batch_size]
        ]

    def __len__(self) -> int:
        return len(self.tasks) // self.batch_size


@chz.chz
class VerifierDatasetBuilder(RLDatasetBuilder):
    """The cookbook's dataset builder for rl-verifier tasks and a reward spec.

    ``tasks`` is a JSONL path or ``taskset:NAME``; ``spec`` a reward spec (``None``:
    each task's ``verifier``); ``settings`` its settings as for ``Scorer``;
    ``model_name_for_tokenizer`` and ``renderer_name`` choose the cookbook renderer.
    """

    tasks: str
    spec: str | None
    model_name_for_tokenizer: str
    renderer_name: str
    batch_size: int
    group_size: int
    settings: dict[str, Any] = chz.field(default_factory=dict)
    test_tasks: str | None = None
    system_prompt: str | None = None
    executor: str = "process"
    workers: int | None = None

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        tokenizer = get_tokenizer(self.model_name_for_tokenizer)
        renderer = renderers.get_renderer(self.renderer_name, tokenizer)
        if self.executor not in get_args(ExecutorKind):
            raise UserError(
                f"executor must be one of {get_args(ExecutorKind)}, not {self.executor!r}"
            )
        kind = cast(ExecutorKind, self.executor)
        scorer = Scorer(self.spec, self.settings, executor=kind, workers=self.workers)

        def dataset(source: str) -> VerifierDataset:
            tasks = list(load_task_source(source).values())
            return VerifierDataset(
                tasks, scorer, renderer, self.batch_size, self.group_size, self.system_prompt
            )

        test = dataset(self.test_tasks) if self.test_tasks else None
        return dataset(self.tasks), test
