"""verifiers 0.4 (``verifiers.v1``): the env ``rl-verifier-group``, n attempts judged as one group.

A group verifier (``judge_rank``, ``0.5*judge_rank + 0.5*exact_match``) needs a task's
completions together; a v1 reward function sees one rollout. ``VerifierGroupEnv.run``
starts ``--env.n`` attempts of the task (the task's own rewards deferred) and its
``finalize`` scores the final replies of the attempts that finished with one
``Scorer.ascore_group``. Each judged trace gets what the per-rollout path records: the
reward ``rlv``, metrics ``rlv/<component>`` and ``rlv/judged`` 1.0. A ``timeout`` or
``error`` is a ``TaskError`` on that trace (``ok`` false, reward ``None``; a timeout also
``scoring_timeout``). A failed attempt is left out of the group (metric ``rlv/in_group``
0.0, the reason in ``trace.info["rlv"]``); fewer finished attempts than a group
verifier's ``min_group_size`` is a ``TaskError`` on each of them, never a reward of 0.
"""

from __future__ import annotations

import asyncio
from typing import Any

import verifiers.v1 as vf  # type: ignore[import-untyped]  # ships no type information
from pydantic import Field

from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.integrations.common import VerifierUnfinished
from rl_verifier.integrations.prime_verifiers import (
    GROUP_ENV_ID,
    Executor,
    VerifierTaskConfig,
    record,
    shared_scorer,
    task_of,
)
from rl_verifier.scoring.scorer import Scorer

__all__ = ["VerifierGroupEnv", "VerifierGroupEnvConfig"]

REWARD = "rlv"


class VerifierGroupEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    """``--env.*`` of ``rl-verifier-group``: the attempts and how they are scored."""

    agent: vf.AgentConfig = vf.AgentConfig()
    n: int = Field(4, ge=1)
    """Attempts per episode, judged as one group."""
    spec: str | None = None
    """Reward spec; unset: our taskset's ``task.spec`` (and its settings), else each
    task's own verifier."""
    settings: dict[str, Any] = Field(default_factory=dict)
    executor: Executor = "process"
    workers: int | None = None


class VerifierGroupEnv(vf.Env[VerifierGroupEnvConfig]):  # type: ignore[misc]
    """n attempts of a task, their final replies scored together by our scorer."""

    def __init__(self, config: VerifierGroupEnvConfig) -> None:
        super().__init__(config)
        known = self.scoring(getattr(self.taskset.config, "task", None))
        if known.spec is not None:  # refuse an impossible group before any attempt
            reward = self.scorer(known).reward
            name, smallest = smallest_group(reward) if reward else ("", 1)
            if config.n < smallest:
                raise UserError(
                    f"verifier '{name}' judges at least {smallest} completions of a task "
                    f"together: set --env.n to {smallest} or more (it is {config.n})"
                )

    def scoring(self, task_config: Any) -> Any:
        """Whose spec, settings and executor score: the env's, else (spec unset) our
        task's ``VerifierTaskConfig``."""
        if self.config.spec is None and isinstance(task_config, VerifierTaskConfig):
            return task_config
        return self.config

    @staticmethod
    def scorer(source: Any) -> Scorer:
        return shared_scorer(source.spec, source.settings, source.executor, source.workers)

    async def run(self, task: Any, agents: Any) -> None:
        attempt = task.defer_scoring()  # this env scores, in finalize
        # TaskGroup: an attempt that raises cancels its siblings (no stragglers).
        async with asyncio.TaskGroup() as group:
            for _ in range(self.config.n):
                group.create_task(agents.agent.run(attempt))

    async def finalize(self, task: Any, episode: Any) -> None:
        """Score the finished attempts as one group; the failed ones say why not."""
        traces = list(episode.traces)
        finished = [t for t in traces if t.ok]
        for trace in traces:
            trace.rewards[REWARD] = None  # unscored until judged
            trace.record_metric("rlv/in_group", float(trace.ok))
            trace.record_metric("rlv/group_size", float(len(finished)))
            if not trace.ok:
                cause = trace.last_error.type if trace.last_error else trace.stop_condition
                why = f" ({cause})" if cause else ""
                trace.info["rlv"] = f"left out of the group: the attempt failed{why}"
        if not finished:
            return
        scorer = self.scorer(self.scoring(task.config))
        ours = task_of(task.data)
        name, smallest = smallest_group(scorer.reward_of(ours))
        if len(finished) < smallest:
            problem = (
                f"verifier '{name}' judges at least {smallest} completions of a task "
                f"together; {len(finished)} of the {len(traces)} attempts finished: no reward"
            )
            for trace in finished:
                trace.record_metric("rlv/judged", 0.0)
                trace.record_error(vf.TaskError(f"{GROUP_ENV_ID} scoring: {problem}"))
            return
        scores = await scorer.ascore_group(ours, [t.last_reply for t in finished])
        for trace, score in zip(finished, scores, strict=True):
            try:
                trace.record_reward(REWARD, record(trace, score))
            except VerifierUnfinished as exc:
                trace.record_error(vf.TaskError(f"{GROUP_ENV_ID} scoring: {exc}"))


def smallest_group(reward: Reward) -> tuple[str, int]:
    """The group verifier of ``reward`` needing the most completions, and that number
    (``("", 1)`` without one)."""
    size, name = max(((reward.verifiers[n].min_group_size, n) for n in reward.groups),
                     default=(1, ""))  # fmt: skip
    return name, size
