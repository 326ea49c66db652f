"""tinker-cookbook evals: our task sources and reward specs as cookbook benchmarks.

``VerifierBenchmark(name, tasks, spec)`` is a cookbook ``BenchmarkBuilder``: pass it to
``tinker_cookbook.eval.benchmarks.run_benchmark`` (or ``register`` it and use its name,
or wrap it in ``BenchmarkEvaluator`` for inline evals during training). Its envs are the
RL adapter's ``VerifierEnv``s, one per task.

Statuses: ``ok``/``invalid`` are rewards as scored. A ``timeout``/``error`` raises
``VerifierUnfinished`` from ``step``, which the cookbook's runner records as an errored
example (``num_errors``, the stored trajectory's ``error``) rather than a wrong answer;
the runner counts it as 0 in ``score``, as it does its own timeouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tinker_cookbook.eval.benchmarks import BenchmarkBuilder, BenchmarkConfig, BenchmarkResult
from tinker_cookbook.renderers import Renderer
from tinker_cookbook.rl.types import Action, ActionExtra, Env, Metrics, StepResult

from rl_verifier.integrations.common import unfinished
from rl_verifier.integrations.tinker_cookbook import VerifierEnv
from rl_verifier.scoring.engine import ExecutorKind
from rl_verifier.scoring.resolve import load_task_source
from rl_verifier.scoring.scorer import Scorer


class VerifierEvalEnv(VerifierEnv):
    """``VerifierEnv`` for evals: a check that did not finish raises."""

    @property
    def example_id(self) -> str:
        """The task id: the cookbook's key for resuming and storing trajectories."""
        return self.task.id

    async def step(self, action: Action, *, extra: ActionExtra | None = None) -> StepResult:
        result = await super().step(action, extra=extra)
        if self.score is not None and not self.score.status.judged:
            raise unfinished(self.score)
        return result


class VerifierBenchmark(BenchmarkBuilder):
    """A cookbook benchmark of ``tasks`` (``taskset:NAME`` or a JSONL path) scored with
    ``spec`` (``None``: each task's ``verifier``) and ``settings``, as for ``Scorer``."""

    def __init__(
        self,
        name: str,
        tasks: str,
        spec: str | None,
        settings: dict[str, Any] | None = None,
        *,
        system_prompt: str | None = None,
        executor: ExecutorKind = "process",
        workers: int | None = None,
    ) -> None:
        self.name = name
        self.tasks = tasks
        self.recommended_system_prompt = system_prompt
        self.scorer = Scorer(spec, settings, executor=executor, workers=workers)

    def make_envs(self, renderer: Renderer, config: BenchmarkConfig) -> Sequence[Env]:
        tasks = list(load_task_source(self.tasks).values())[: config.max_examples]
        prompt = config.system_prompt or self.recommended_system_prompt
        return [VerifierEvalEnv(task, self.scorer, renderer, prompt) for task in tasks]

    def aggregate(self, rewards: list[float], metrics_list: list[Metrics]) -> BenchmarkResult:
        """The cookbook's accuracy (reward > 0), plus the mean reward and the mean of each
        ``rlv/`` metric (statuses, components) over the examples that report it."""
        result = super().aggregate(rewards, metrics_list)
        result.metrics["mean_reward"] = sum(rewards) / len(rewards) if rewards else 0.0
        names = dict.fromkeys(k for m in metrics_list for k in m if k.startswith("rlv/"))
        for key in names:
            values = [float(m[key]) for m in metrics_list if key in m]
            result.metrics[key] = sum(values) / len(values)
        return result

    def close(self) -> None:
        """Stop the scorer's workers (they also stop at exit)."""
        self.scorer.close()
