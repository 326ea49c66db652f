"""One eval from start to end: check everything, sample what is missing, summarise, report.

Everything is checked before the output folder is created or a server is started: the
tasks, the reward of every task, the environment, the ks, the model for its backend.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rl_verifier.base.contracts import Task
from rl_verifier.base.errors import UserError
from rl_verifier.base.validity import checked_score
from rl_verifier.evaluation import model as models
from rl_verifier.evaluation.files import EvalDir, read_sample_rows
from rl_verifier.evaluation.openai_sampling import OpenAISampler, openai_client
from rl_verifier.evaluation.report import write_eval_report
from rl_verifier.evaluation.runner import Key, Plan, run_missing, sample_of, score_completion
from rl_verifier.evaluation.sampling import Sampler, SamplesTasks, SamplingSettings
from rl_verifier.evaluation.summary import summarise
from rl_verifier.scoring.engine import ScoringEngine, make_executor
from rl_verifier.scoring.resolve import RewardResolver, environment, load_task_source
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.environments import Environment
from rl_verifier.train.loop import SessionEnd
from rl_verifier.train.metrics import progress
from rl_verifier.train.renderer import Renderer


@dataclass
class EvalRequest:
    """``rlv eval``'s options."""

    model: str
    tasks: str
    out: Path
    n: int
    ks: list[int]
    reward: str | None = None
    verifier_config: dict[str, Any] = field(default_factory=dict)
    threshold: float = 1.0
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    environment: str = "single_turn"
    max_turns: int = 1
    base_url: str | None = None
    openai_base_url: str | None = None
    resume: bool = False
    executor: str = "process"
    workers: int | None = None

    @property
    def backend(self) -> str:
        if self.openai_base_url:
            return "openai"
        return "tinker" if self.base_url else "local"

    def record(self) -> dict[str, Any]:
        """What ``eval.json`` keeps."""
        return {
            "model": self.model,
            "tasks": self.tasks,
            "reward": self.reward,
            "verifier_config": self.verifier_config,
            "n": self.n,
            "k": self.ks,
            "threshold": self.threshold,
            "sampling": self.sampling.as_dict(),
            "environment": self.environment,
            "max_turns": self.max_turns,
            "backend": self.backend,
            "base_url": self.openai_base_url or self.base_url,
        }


def check_ks(ks: list[int], n: int) -> None:
    bad = [k for k in ks if not 1 <= k <= n]
    if bad:
        raise UserError(f"-k {bad[0]}: each k must be between 1 and -n ({n})")


def plan_for(source: str, reward: str | None, settings: dict[str, Any], n: int) -> Plan:
    """The tasks with the reward of each, all built now so a bad spec fails first."""
    tasks = list(load_task_source(source).values())
    if not tasks:
        raise UserError(f"{source}: no tasks")
    rewards = RewardResolver(reward, settings, source)
    for task in tasks:
        rewards(task)
    rewards.check_settings_used()
    return Plan(tasks, rewards, n)


def env_for(request: EvalRequest) -> Environment:
    config = TrainConfig(
        tasks=request.tasks,
        environment=request.environment,
        max_turns=request.max_turns,
        verifier_config=request.verifier_config,
    )
    built: Environment = environment(request.environment, config)
    return built


def evaluate(request: EvalRequest) -> dict[str, Any]:
    """Run (or resume) the eval; returns its summary."""
    check_ks(request.ks, request.n)
    plan = plan_for(request.tasks, request.reward, request.verifier_config, request.n)
    env = env_for(request)
    choice = models.resolve_model(request.model)
    if request.openai_base_url is None:
        models.check_model(choice, request.base_url)
    folder = EvalDir(request.out)
    folder.start(request.record(), request.resume)
    begin = time.perf_counter()
    resumed = folder.resume_rows(functools.partial(row_problem, plan))
    done = {(row["task_id"], row["sample_index"]): row["completion"] for row in resumed.kept}
    if resumed.kept or resumed.dropped:
        progress(f"resuming {folder.path}: {len(done)} of {len(plan.tasks) * plan.n} samples done")
    if resumed.why is not None:
        progress(
            f"{resumed.why} (the first of {resumed.dropped} rows dropped; their samples are "
            "drawn and scored again)"
        )
    if request.openai_base_url is not None:
        sampler = OpenAISampler(
            openai_client(request.openai_base_url), request.model, env, request.sampling
        )
        asyncio.run(sample_missing(request, plan, sampler, folder, done))
    else:
        asyncio.run(sample_tinker(request, plan, env, choice, folder, done))
    return finish(folder, request.record(), [t.id for t in plan.tasks], time.perf_counter() - begin)


def row_problem(plan: Plan, row: dict[str, Any]) -> str | None:
    """Why a finished sample's row cannot be kept by a resumed eval: its score is not one
    this run's reward would give (``validity.checked_score``), or not this sample's. Rows
    outside the plan (another task, an index past ``-n``) are kept as they are."""
    task = plan.by_id.get(row["task_id"])
    if task is None or row["sample_index"] >= plan.n:
        return None
    checked = checked_score(row["score"], plan.rewards(task))
    if isinstance(checked, str):
        return checked
    if (checked.task_id, checked.sample_index) != (row["task_id"], row["sample_index"]):
        return f"the score of {checked.task_id} #{checked.sample_index}, not of this sample"
    return None


async def sample_tinker(
    request: EvalRequest,
    plan: Plan,
    env: Environment,
    choice: models.ModelChoice,
    folder: EvalDir,
    done: Mapping[Key, Any],
) -> None:
    """Sample through the Tinker SDK, from ``--base-url`` or a local ``rlv serve``."""
    import tinker

    with models.connect(choice, request.base_url, folder.path) as connection:
        service = tinker.ServiceClient(base_url=connection.base_url, api_key=connection.api_key)
        outcome: SessionEnd = "errored"
        try:
            client = await models.sampling_client(service, choice)
            local = request.base_url is None
            renderer = Renderer(models.tokenizer(client, choice, local))
            sampler = Sampler(client, renderer, env, request.sampling)
            await sample_missing(request, plan, sampler, folder, done)
            outcome = "success"
        except (KeyboardInterrupt, asyncio.CancelledError):
            outcome = "interrupted"
            raise
        finally:
            await service.close(outcome)


async def sample_missing(
    request: EvalRequest,
    plan: Plan,
    sampler: SamplesTasks,
    folder: EvalDir,
    done: Mapping[Key, Any],
) -> None:
    """Sample and score what ``done`` (the finished samples' completions) lacks, appending
    each row to the folder."""
    total = len(plan.tasks) * plan.n
    finished = len(done.keys() & {(t.id, i) for t in plan.tasks for i in range(plan.n)})

    def write(row: dict[str, Any]) -> None:
        nonlocal finished
        folder.append(row)
        finished += 1
        if finished % max(1, total // 10) == 0 or finished == total:
            progress(f"sampled and scored {finished}/{total}")

    executor = make_executor(request.executor, request.workers)  # type: ignore[arg-type]
    async with executor:
        engine = ScoringEngine(executor, keep_scores=False)
        await run_missing(plan, sampler, engine, done, write, earlier=done)


def finish(
    folder: EvalDir, settings: dict[str, Any], task_ids: list[str], wall_s: float
) -> dict[str, Any]:
    """Summarise the folder's samples of ``task_ids`` (below ``n``), write it and the report."""
    n = settings["n"]
    wanted = set(task_ids)
    rows = [r for r in folder.rows() if r["task_id"] in wanted and r["sample_index"] < n]
    summary = {
        "settings": settings,
        **summarise(rows, task_ids, settings["k"], settings["threshold"]),
        "wall_s": wall_s,
    }
    folder.write_summary(summary)
    write_eval_report(folder.path, summary, rows)
    return summary


@dataclass
class RescoreRequest:
    """``rlv eval --rescore``'s options."""

    samples: Path
    out: Path
    reward: str | None
    verifier_config: dict[str, Any]
    tasks: str | None
    ks: list[int] | None
    threshold: float
    executor: str = "process"
    workers: int | None = None


def rescore(request: RescoreRequest) -> dict[str, Any]:
    """Score saved samples again with another reward, into a new eval folder."""
    rows = read_sample_rows(request.samples)
    if not rows:
        raise UserError(f"{request.samples}: no samples")
    beside = EvalDir(request.samples.parent)
    before = beside.settings() if beside.exists() else {}
    source = request.tasks or before.get("tasks")
    if not source:
        raise UserError(f"--rescore: no {beside.settings_file}; give --tasks")
    n = max(row["sample_index"] for row in rows) + 1
    ks = request.ks or [k for k in before.get("k", [1]) if k <= n] or [1]
    check_ks(ks, n)
    plan = plan_for(source, request.reward, request.verifier_config, n)
    by_id = {task.id: task for task in plan.tasks}
    unknown = [row["task_id"] for row in rows if row["task_id"] not in by_id]
    if unknown:
        raise UserError(f"{request.samples}: task '{unknown[0]}' is not in {source}")
    folder = EvalDir(request.out)
    if request.out.resolve() == request.samples.parent.resolve():
        raise UserError("--rescore writes a new eval folder: give another --out")
    settings = {
        **before,
        "tasks": source,
        "reward": request.reward,
        "verifier_config": request.verifier_config,
        "n": n,
        "k": ks,
        "threshold": request.threshold,
        "rescored_from": str(request.samples),
    }
    folder.start(settings, resume=False)
    begin = time.perf_counter()
    rescored = asyncio.run(score_rows(request, plan, rows))
    folder.write_samples(rescored)
    task_ids = [t.id for t in plan.tasks if t.id in {row["task_id"] for row in rows}]
    return finish(folder, settings, task_ids, time.perf_counter() - begin)


async def score_rows(
    request: RescoreRequest, plan: Plan, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    by_id = {task.id: task for task in plan.tasks}
    executor = make_executor(request.executor, request.workers)  # type: ignore[arg-type]
    async with executor:
        engine = ScoringEngine(executor, keep_scores=False)

        async def one(row: dict[str, Any]) -> dict[str, Any]:
            task = by_id[row["task_id"]]
            score = await score_completion(
                engine, plan, task, row["sample_index"], row["completion"]
            )
            return {**row, "score": score.model_dump(mode="json")}

        async def group(task: Task, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
            samples = [sample_of(task, r["sample_index"], r["completion"]) for r in members]
            scores = await engine.score_group(plan.rewards(task), samples)
            return [
                {**r, "score": s.model_dump(mode="json")}
                for r, s in zip(members, scores, strict=True)
            ]

        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            if plan.rewards(by_id[row["task_id"]]).groups:
                groups.setdefault(row["task_id"], []).append(row)
        singles = [one(row) for row in rows if row["task_id"] not in groups]
        judged = [group(by_id[task_id], members) for task_id, members in groups.items()]
        scored = await asyncio.gather(*singles, *judged)
        by_key = {}
        for item in scored:
            for r in item if isinstance(item, list) else [item]:
                by_key[(r["task_id"], r["sample_index"])] = r
        return [by_key[(row["task_id"], row["sample_index"])] for row in rows]
