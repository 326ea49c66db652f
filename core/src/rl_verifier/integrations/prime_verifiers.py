"""PrimeIntellect ``verifiers``: a reward spec as a ``vf.Rubric``.

``rubric("0.8*pytest + 0.2*format")`` returns a Rubric whose reward function takes
verifiers' named arguments (``prompt``, ``completion``, ``answer``, ``info``,
``state``) and scores the rollout with a ``Scorer``. The task's reference is ``answer``
(a mapping as it is, anything else as ``{"answer": ...}``) updated with
``info["reference"]``; ``info["verifier"]`` names the verifier when ``spec`` is ``None``.

A Rubric sums floats, so a check that timed out or failed scores 0.0; it also sets
``state["error"]`` to a ``vf.InfraError`` (verifiers' mark for infrastructure failures)
and the metric ``rlv_judged`` to 0.0. With ``group=True`` the reward is a group
function that gives such a rollout the mean of its group's judged rewards instead,
so its advantage in ``score_group`` is 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import verifiers as vf  # type: ignore[import-untyped]  # ships no type information

from rl_verifier.contracts import Score, Task
from rl_verifier.engine import ExecutorKind
from rl_verifier.errors import UserError
from rl_verifier.integrations.common import metric_name, prompt_id
from rl_verifier.resolve import spec_names
from rl_verifier.scorer import Scorer

SCORE_KEY = "rlv_score"  # where a rollout's score is kept in its state (as plain data)


def plain(value: Any) -> Any:
    """verifiers' pydantic messages (or lists of them) as plain dicts."""
    if isinstance(value, list):
        return [plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value


def make_task(prompt: Any, answer: Any, info: Mapping[str, Any] | None, example_id: Any) -> Task:
    """The task of one rollout, from verifiers' named arguments."""
    info = dict(info or {})
    reference = dict(answer) if isinstance(answer, Mapping) else {}
    if not isinstance(answer, Mapping) and answer not in (None, ""):
        reference["answer"] = answer
    if isinstance(info.get("reference"), Mapping):
        reference.update(info["reference"])
    prompt = plain(prompt) if prompt is not None else ""
    task_id = example_id if isinstance(example_id, str | int) else prompt_id(prompt)
    return Task.model_validate(
        {
            "id": task_id,
            "prompt": prompt,
            "verifier": info.get("verifier"),
            "reference": reference,
        }
    )


def record(state: Any, score: Score) -> None:
    """Keep the score on the state; flag a failed check as verifiers does."""
    state[SCORE_KEY] = score.model_dump(mode="json")
    if not score.status.judged and state.get("error") is None:
        failure = vf.InfraError(f"rl-verifier {score.status.value}: {score.error or ''}")
        setter = getattr(state, "_set_error", None)
        if callable(setter):
            setter(failure)
        else:
            state["error"] = failure


class RubricFactory:
    """Builds the reward and metric functions of one spec around one scorer."""

    def __init__(self, scorer: Scorer, name: str, parts: Sequence[str]) -> None:
        self.scorer = scorer
        self.name = name
        self.parts = list(parts)

    async def score_state(self, state: Any) -> Score:
        task = make_task(
            state.get("prompt"), state.get("answer"), state.get("info"), state.get("example_id")
        )
        completion = plain(state.get("completion")) or ""
        score = await self.scorer.ascore(task, completion)
        record(state, score)
        return score

    def reward(self) -> Callable[..., Any]:
        async def reward(state: Any, **_: Any) -> float:
            score = await self.score_state(state)
            return score.reward if score.status.judged else 0.0

        reward.__name__ = self.name
        return reward

    def group_reward(self) -> Callable[..., Any]:
        async def group_reward(states: list[Any], **_: Any) -> list[float]:
            scores = await asyncio.gather(*(self.score_state(state) for state in states))
            judged = [s.reward for s in scores if s.status.judged]
            fill = sum(judged) / len(judged) if judged else 0.0
            return [s.reward if s.status.judged else fill for s in scores]

        group_reward.__name__ = self.name
        return group_reward

    def metrics(self, group: bool) -> list[Callable[..., Any]]:
        """``rlv_judged`` and each part of a composite spec (weight 0 in the Rubric)."""
        made = [self._metric("rlv_judged", _judged, group)]
        for part in self.parts:
            made.append(self._metric(f"{self.name}_{part}", _component(part), group))
        return made

    @staticmethod
    def _metric(name: str, read: Callable[[Score], float], group: bool) -> Callable[..., Any]:
        def value(state: Any) -> float:
            kept = state.get(SCORE_KEY)
            return read(Score.model_validate(kept)) if isinstance(kept, Mapping) else 0.0

        def one(state: Any, **_: Any) -> float:
            return value(state)

        def many(states: list[Any], **_: Any) -> list[float]:
            return [value(state) for state in states]

        func = many if group else one
        func.__name__ = name
        return func


def _judged(score: Score) -> float:
    return 1.0 if score.status.judged else 0.0


def _component(name: str) -> Callable[[Score], float]:
    def read(score: Score) -> float:
        return score.components.get(name, 0.0)

    return read


def rubric(
    spec: str | None,
    *,
    group: bool = False,
    name: str | None = None,
    scorer: Scorer | None = None,
    executor: ExecutorKind = "process",
    workers: int | None = None,
    parser: Any = None,
    **settings: Any,
) -> Any:
    """A ``vf.Rubric`` scoring rollouts with ``spec`` and ``settings`` (for a composite
    spec, keyed by verifier name). ``group=True`` gives failed checks their group's
    judged mean (for ``score_group``); the default works for ``score_rollout`` too."""
    if scorer is not None and settings:
        raise UserError("give settings to the Scorer, not beside it")
    scorer = scorer or Scorer(spec, settings, executor=executor, workers=workers)
    label = name or f"rlv_{metric_name(spec or 'per_task')}"
    parts = spec_names(spec) if spec and len(spec_names(spec)) > 1 else []
    factory = RubricFactory(scorer, label, parts)
    metrics = factory.metrics(group)
    funcs = [factory.group_reward() if group else factory.reward(), *metrics]
    return vf.Rubric(funcs=funcs, weights=[1.0] + [0.0] * len(metrics), parser=parser)
