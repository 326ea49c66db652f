"""PrimeIntellect ``verifiers`` 0.4 (``verifiers.v1``): reward specs and task sets.

- ``reward_function("0.8*pytest + 0.2*format")`` is a v1 reward function
  ``(task, trace) -> float`` (``task`` being the task's data, as v1 passes it): a
  ``@vf.reward`` method when set as an attribute of a ``vf.Task`` class.
- ``VerifierTaskset`` is a v1 ``Taskset`` of ``VerifierTask`` built from any of our task
  sources (``taskset:NAME`` or a JSONL path), under the taskset id ``rl-verifier-tasks``
  (``vf-eval rl-verifier-tasks --env.taskset.source ...``; see ``rl_verifier_tasks``).
- ``VerifierGroupEnv`` (``prime_verifiers_group``, env id ``rl-verifier-group``) runs n
  attempts of a task and scores them together: the place for group verifiers, which a
  reward function (one rollout at a time) refuses with an error naming that env.

The completion scored is the agent's final reply (``trace.last_reply``). An ``ok`` or
``invalid`` score is the reward; its components become metrics (``rlv/<name>``) with
``rlv/judged`` 1.0. A ``timeout`` or ``error`` is not a reward of 0: the function raises
``VerifierUnfinished``, which v1 records as a ``TaskError`` on the trace (``trace.ok``
False, the reward left unscored); a ``timeout`` also marks the trace
``is_timeout`` with stop condition ``scoring_timeout``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import verifiers.v1 as vf  # type: ignore[import-untyped]  # ships no type information
from pydantic import Field
from verifiers.v1.types import content_text  # type: ignore[import-untyped]

from rl_verifier.base.contracts import Score, Status, Task
from rl_verifier.base.errors import UserError
from rl_verifier.base.verifier import GroupOnly
from rl_verifier.integrations.common import VerifierUnfinished, metric_name, unfinished
from rl_verifier.scoring.resolve import load_task_source
from rl_verifier.scoring.scorer import Scorer

__all__ = [
    "VerifierTask",
    "VerifierTaskConfig",
    "VerifierTaskData",
    "VerifierTaskset",
    "VerifierTasksetConfig",
    "VerifierUnfinished",
    "reward_function",
]

Executor = Literal["process", "inline", "ray"]
GROUP_ENV_ID = "rl-verifier-group"
_scorers: dict[str, Scorer] = {}
_scorers_lock = threading.Lock()


def shared_scorer(
    spec: str | None, settings: Mapping[str, Any], executor: Executor, workers: int | None
) -> Scorer:
    """This process's scorer for one configuration: made once, kept until exit."""
    key = json.dumps([spec, settings, executor, workers], sort_keys=True, default=str)
    with _scorers_lock:
        if key not in _scorers:
            _scorers[key] = Scorer(spec, settings, executor=executor, workers=workers)
        return _scorers[key]


def task_of(data: Any) -> Task:
    """Our task from v1 task data: ``reference`` (a mapping) or else ``answer`` is the
    reference; ``verifier`` names the verifier when the spec does not."""
    reference = getattr(data, "reference", None)
    if not isinstance(reference, Mapping):
        answer = getattr(data, "answer", None)
        reference = {} if answer in (None, "") else {"answer": answer}
    prompt: Any = data.prompt or ""
    if not isinstance(prompt, str):
        prompt = [{"role": m.role, "content": content_text(m.content)} for m in prompt]
    ident = data.id if data.id is not None else (data.idx if data.idx is not None else "task")
    return Task.model_validate(
        {
            "id": str(ident),
            "prompt": prompt,
            "verifier": getattr(data, "verifier", None),
            "reference": dict(reference),
        }
    )


def record(trace: Any, score: Score) -> float:
    """The reward of a judged score, its components as metrics; raise for the rest."""
    if score.status.judged:
        trace.record_metrics({f"rlv/{k}": v for k, v in score.components.items()})
        trace.record_metric("rlv/judged", 1.0)
        return score.reward
    trace.record_metric("rlv/judged", 0.0)
    if score.status is Status.TIMEOUT:
        trace.record_timeout("scoring")
    raise unfinished(score)


async def score_reply(scorer: Scorer, data: Any, trace: Any) -> float:
    """Score one rollout's final reply and record it; a group verifier refuses, naming
    the env that scores a task's attempts together."""
    try:
        score = await scorer.ascore(task_of(data), trace.last_reply)
    except GroupOnly as exc:
        raise UserError(
            f"{exc}. A v1 reward function sees one rollout at a time: run the env "
            f"{GROUP_ENV_ID} (--env.id {GROUP_ENV_ID} --env.n N), which scores the N "
            "attempts of a task as one group"
        ) from None
    return record(trace, score)


class RewardFunction:
    """A v1 reward function ``(task, trace) -> float`` scoring with one ``Scorer``."""

    def __init__(self, scorer: Scorer, name: str | None, weight: float = 1.0) -> None:
        self.scorer = scorer
        self.named = name is not None
        self.__name__ = name or f"rlv_{metric_name(scorer.spec or 'per_task')}"
        vf.reward(self, weight=weight)  # v1's marks: reward, weight, priority

    def __set_name__(self, owner: type, name: str) -> None:
        """On a ``vf.Task`` class, the reward is named like the attribute (unless named)."""
        if not self.named:
            self.__name__ = name

    def __repr__(self) -> str:
        return f"RewardFunction({self.__name__!r}, {self.scorer!r})"

    async def __call__(self, task: Any, trace: Any) -> float:
        """``task`` is what v1 passes by that name: the task's data (or the task)."""
        data = task.data if isinstance(task, vf.Task) else task
        return await score_reply(self.scorer, data, trace)


def reward_function(
    spec: str | None,
    *,
    name: str | None = None,
    weight: float = 1.0,
    scorer: Scorer | None = None,
    executor: Executor = "process",
    workers: int | None = None,
    **settings: Any,
) -> RewardFunction:
    """A v1 reward function for ``spec`` with ``settings`` (for a composite spec, keyed
    by verifier name); ``spec=None`` uses each task's ``verifier``. Its name is ``name``,
    else the attribute it is set as on a task class, else ``rlv_<spec names>``. Pass
    ``scorer`` to share one scorer (and its worker pool)."""
    if scorer is not None and settings:
        raise UserError("give settings to the Scorer, not beside it")
    scorer = scorer or Scorer(spec, settings, executor=executor, workers=workers)
    return RewardFunction(scorer, name, weight)


class VerifierTaskData(vf.TaskData):  # type: ignore[misc]
    """v1 task data carrying our task's verifier, reference and metadata."""

    verifier: str | None = None
    reference: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class VerifierTaskConfig(vf.TaskConfig):  # type: ignore[misc]
    """How a ``VerifierTask`` scores (``--env.taskset.task.*``)."""

    spec: str | None = None
    """Reward spec; unset: each task's own verifier."""
    settings: dict[str, Any] = Field(default_factory=dict)
    executor: Executor = "process"
    workers: int | None = None


class VerifierTask(vf.Task[VerifierTaskData, vf.State, VerifierTaskConfig]):  # type: ignore[misc]
    """One of our tasks as a v1 task; its reward ``rlv`` scores the final reply."""

    @vf.reward  # type: ignore[untyped-decorator]
    async def rlv(self, trace: Any) -> float:
        config = self.config
        scorer = shared_scorer(config.spec, config.settings, config.executor, config.workers)
        return await score_reply(scorer, self.data, trace)


class VerifierTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """``--env.taskset.source``: ``taskset:NAME`` or a JSONL path of our tasks."""

    source: str = ""
    task: VerifierTaskConfig = VerifierTaskConfig()


class VerifierTaskset(vf.Taskset[VerifierTask, VerifierTasksetConfig]):  # type: ignore[misc]
    """Our task source as a v1 taskset, in the source's order."""

    def load(self) -> Iterator[VerifierTask]:
        if not self.config.source:
            raise UserError("set the taskset's source: taskset:NAME or a JSONL path")
        for task in load_task_source(self.config.source).values():
            prompt = (
                task.prompt
                if isinstance(task.prompt, str)
                else [m.model_dump(exclude_none=True) for m in task.prompt]
            )
            data = VerifierTaskData(
                id=task.id,
                prompt=prompt,
                verifier=task.verifier,
                reference=task.reference,
                metadata=task.metadata,
            )
            yield VerifierTask(data, self.config.task)
