"""TRL: rl-verifier rewards as ``GRPOTrainer`` reward functions.

``reward_func("0.8*pytest + 0.2*format")`` returns an async callable with TRL's
reward-function signature: ``prompts`` and ``completions`` (text or conversational) plus
every dataset column as a keyword argument, one list entry per completion. It returns
one float per completion, or ``None`` where the check timed out or failed, which TRL
leaves out of the group baseline and trains with advantage 0. Each task's ``reference``
comes from a ``reference`` column, or else from the columns named in
``reference_columns``, or else from all the other columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rl_verifier.base.contracts import Score, Task
from rl_verifier.base.errors import UserError
from rl_verifier.integrations.common import (
    batch_figures,
    metric_name,
    prompt_id,
    trainable_reward,
)
from rl_verifier.scoring.engine import ExecutorKind
from rl_verifier.scoring.scorer import CompletionLike, Scorer

# Keyword arguments TRL adds beside the dataset columns.
TRAINER_KEYWORDS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
# Columns that fill a task's own fields rather than its reference.
TASK_COLUMNS = frozenset({"id", "task_id", "verifier", "metadata", "reference"})


def task_from_row(
    prompt: Any, row: Mapping[str, Any], reference_columns: Sequence[str] | None = None
) -> Task:
    """The task of one dataset row (its columns, without TRL's own keywords)."""
    task_id = row.get("id", row.get("task_id"))
    if "reference" in row and row["reference"] is not None:
        if not isinstance(row["reference"], Mapping):
            raise UserError(f"column 'reference' must hold a mapping, got {row['reference']!r}")
        reference = dict(row["reference"])
    elif reference_columns is not None:
        missing = [c for c in reference_columns if c not in row]
        if missing:
            raise UserError(f"dataset has no column '{missing[0]}' (named in reference_columns)")
        reference = {c: row[c] for c in reference_columns}
    else:
        reference = {k: v for k, v in row.items() if k not in TASK_COLUMNS}
    return Task.model_validate(
        {
            "id": task_id if isinstance(task_id, str | int) else prompt_id(prompt),
            "prompt": prompt,
            "verifier": row.get("verifier"),
            # datasets fills struct keys that other rows have with None: leave them out
            "reference": {k: v for k, v in reference.items() if v is not None},
            "metadata": dict(row.get("metadata") or {}),
        }
    )


class RewardFunction:
    """A TRL reward function scoring with one ``Scorer`` (async; TRL awaits it)."""

    def __init__(
        self, scorer: Scorer, name: str, reference_columns: Sequence[str] | None = None
    ) -> None:
        self.scorer = scorer
        self.__name__ = name  # TRL logs rewards/<name>/mean
        self.reference_columns = reference_columns

    def __repr__(self) -> str:
        return f"RewardFunction({self.__name__!r}, {self.scorer!r})"

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[CompletionLike], **columns: Any
    ) -> list[float | None]:
        pairs = self.pairs(prompts, completions, columns)
        scores = await self.scorer.ascore_many(pairs)
        self.report(scores, columns)
        return [trainable_reward(s) for s in scores]

    def pairs(
        self,
        prompts: Sequence[Any],
        completions: Sequence[CompletionLike],
        columns: Mapping[str, Any],
    ) -> list[tuple[Task, CompletionLike]]:
        data = {
            k: v for k, v in columns.items() if k not in TRAINER_KEYWORDS and k != "completion_ids"
        }
        for key, values in data.items():
            if not isinstance(values, Sequence) or len(values) != len(prompts):
                raise UserError(f"column '{key}' must hold one value per completion")
        rows = [{k: v[i] for k, v in data.items()} for i in range(len(prompts))]
        return [
            (task_from_row(prompt, row, self.reference_columns), completion)
            for prompt, row, completion in zip(prompts, rows, completions, strict=True)
        ]

    def report(self, scores: Sequence[Score], columns: Mapping[str, Any]) -> None:
        """Components and statuses into TRL's metrics and completions table."""
        log_metric: Callable[[str, float], None] | None = columns.get("log_metric")
        log_extra: Callable[[str, list[Any]], None] | None = columns.get("log_extra")
        if log_metric is not None:
            for key, value in batch_figures(scores).items():
                log_metric(f"{self.__name__}/{key}", value)
        if log_extra is not None:
            log_extra(f"{self.__name__}_status", [s.status.value for s in scores])


class SyncRewardFunction(RewardFunction):
    """The same reward function for callers that cannot await (older TRL releases)."""

    def __call__(  # type: ignore[override]
        self, prompts: Sequence[Any], completions: Sequence[CompletionLike], **columns: Any
    ) -> list[float | None]:
        scores = self.scorer.score_many(self.pairs(prompts, completions, columns))
        self.report(scores, columns)
        return [trainable_reward(s) for s in scores]


def reward_func(
    spec: str | None,
    *,
    name: str | None = None,
    reference_columns: Sequence[str] | None = None,
    executor: ExecutorKind = "process",
    workers: int | None = None,
    scorer: Scorer | None = None,
    asynchronous: bool = True,
    **settings: Any,
) -> RewardFunction:
    """A TRL reward function for ``spec`` with ``settings`` (for a composite spec, keyed
    by verifier name: ``pytest={"timeout_s": 10}``). ``spec=None`` takes each row's
    ``verifier`` column. Pass ``scorer`` to share one scorer (and its worker pool)
    between several reward functions (``spec`` and ``settings`` are then the scorer's)."""
    if scorer is not None and settings:
        raise UserError("give settings to the Scorer, not beside it")
    scorer = scorer or Scorer(spec, settings, executor=executor, workers=workers)
    label = name or f"rlv_{metric_name(spec or 'per_task')}"
    kind = RewardFunction if asynchronous else SyncRewardFunction
    return kind(scorer, label, reference_columns)
