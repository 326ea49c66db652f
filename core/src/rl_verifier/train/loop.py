"""The RL loop: sample groups, score them with verifiers, update the LoRA policy.

Sampling and scoring run in a producer task; training consumes its batches. With
``sampling_ahead = 0`` the producer samples step ``s`` only from the weights after step
``s - 1`` (strictly on-policy); with ``k > 0`` it may use weights up to ``k`` steps old,
so sampling and scoring of the next step overlap training of this one.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from rl_verifier.contracts import Completion, Score, Task
from rl_verifier.engine import Sample, ScoringEngine
from rl_verifier.errors import UserError
from rl_verifier.scoring import make_executor
from rl_verifier.summary import component_means, reward_stats, status_counts
from rl_verifier.train.advantages import group_advantages, is_degenerate
from rl_verifier.train.backend import Connection, connect
from rl_verifier.train.config import TrainConfig
from rl_verifier.train.environments import Episode, SingleTurn, Turn, run_episode
from rl_verifier.train.packing import PackedDatum, Segment, pack, supervised, to_datum
from rl_verifier.train.preflight import Plan, prepare
from rl_verifier.train.renderer import Renderer
from rl_verifier.train.rundir import RunDir


@dataclass
class Rollout:
    task: Task
    episode: Episode
    score: Score


@dataclass
class Batch:
    step: int
    groups: list[list[Rollout]]
    sampler_version: int
    sampling_s: float
    scoring_s: float  # scoring wall time left after sampling ended (not hidden behind it)
    scoring_busy_s: float  # scoring time summed over groups


@dataclass
class SamplerBoard:
    """The newest sampling client and how many training steps its weights have seen."""

    version: int = -1
    client: Any = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def publish(self, version: int, client: Any) -> None:
        async with self.changed:
            self.version, self.client = version, client
            self.changed.notify_all()

    async def at_least(self, version: int) -> tuple[int, Any]:
        async with self.changed:
            await self.changed.wait_for(lambda: self.version >= version)
            return self.version, self.client


def tasks_for_step(tasks: list[Task], step: int, per_step: int, seed: int) -> list[Task]:
    """Deterministic in ``step``: a resumed run continues the same data order."""
    chosen = []
    for slot in range(step * per_step, (step + 1) * per_step):
        epoch, position = divmod(slot, len(tasks))
        order = list(range(len(tasks)))
        random.Random(f"{seed}:{epoch}").shuffle(order)
        chosen.append(tasks[order[position]])
    return chosen


class Trainer:
    def __init__(
        self, config: TrainConfig, plan: Plan, run: RunDir, connection: Connection
    ) -> None:
        self.config = config
        self.plan = plan
        self.run = run
        self.connection = connection
        self.tasks = plan.tasks
        self.rewards = plan.rewards
        self.env = plan.env
        self.board = SamplerBoard()
        self.stopping: str | None = None

    # Setup ------------------------------------------------------------------------

    async def open(self, resume_path: str | None) -> None:
        import tinker

        self.service = tinker.ServiceClient(
            base_url=self.connection.base_url, api_key=self.connection.api_key
        )
        if resume_path:
            self.training = await self.service.create_training_client_from_state_with_optimizer(
                resume_path
            )
        else:
            try:
                self.training = await self.service.create_lora_training_client(
                    base_model=self.config.base_model,
                    rank=self.config.lora_rank,
                    seed=self.config.seed,
                )
            except (tinker.RequestFailedError, tinker.APIStatusError) as exc:
                if isinstance(exc, tinker.APIStatusError) and exc.status_code >= 500:
                    raise
                log = self.run.path / "server.log"
                where = f" (server log: {log})" if self.config.backend == "local" else ""
                raise UserError(
                    f"could not start training base model '{self.config.base_model}': "
                    f"{server_words(exc)}{where}"
                ) from None
        self.renderer = Renderer(self.training.get_tokenizer())

    # Sampling and scoring -----------------------------------------------------------

    def sampling_params(self, seed: int) -> Any:
        from tinker import types

        return types.SamplingParams(
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            stop=self.renderer.stop(),
            seed=seed,
        )

    async def group_episodes(self, sampler: Any, task: Task, seed: int) -> list[Episode]:
        from tinker import types

        size = self.config.group_size
        if isinstance(self.env, SingleTurn):  # one request for the whole group
            messages = self.env.start(task)
            prompt = self.renderer.prompt_tokens(messages)
            result = await sampler.sample(
                prompt=types.ModelInput.from_ints(prompt),
                num_samples=size,
                sampling_params=self.sampling_params(seed),
            )
            return [self.single_episode(messages, prompt, s) for s in result.sequences]

        async def one(index: int) -> Episode:
            async def sample(prompt: list[int]) -> Turn:
                result = await sampler.sample(
                    prompt=types.ModelInput.from_ints(prompt),
                    num_samples=1,
                    sampling_params=self.sampling_params(seed * 1000 + index),
                )
                seq = result.sequences[0]
                tokens = list(seq.tokens)
                return Turn(tokens, list(seq.logprobs or []), self.renderer.response_text(tokens))

            return await run_episode(self.env, task, self.renderer, sample, self.max_context)

        return list(await asyncio.gather(*(one(i) for i in range(size))))

    max_context = 4096

    def single_episode(
        self, messages: list[dict[str, Any]], prompt: list[int], seq: Any
    ) -> Episode:
        tokens = list(seq.tokens)
        text = self.renderer.response_text(tokens)
        return Episode(
            segments=[
                Segment(prompt, sampled=False),
                Segment(tokens, sampled=True, logprobs=list(seq.logprobs or [])),
            ],
            messages=[*messages, {"role": "assistant", "content": text}],
            final_text=text,
            turns=1,
            tool_calls=[],
        )

    async def score_group(
        self, engine: ScoringEngine, task: Task, episodes: list[Episode], prompt_len: int
    ) -> list[Rollout]:
        reward = self.rewards(task)
        samples = [
            Sample(task, Completion(task_id=task.id, completion=e.messages[prompt_len:]), i)
            for i, e in enumerate(episodes)
        ]
        scores = await asyncio.gather(*(engine.score_one(reward, s) for s in samples))
        return [Rollout(task, e, s) for e, s in zip(episodes, scores, strict=True)]

    async def sample_then_score(
        self, engine: ScoringEngine, sampler: Any, step: int, g: int, task: Task
    ) -> tuple[list[Rollout], float, float]:
        """One group: its rollouts, when its sampling ended and how long scoring took."""
        seed = (self.config.seed * 1_000_003 + step * 1009 + g) % (2**31)
        episodes = await self.group_episodes(sampler, task, seed)
        sampled_at = time.perf_counter()
        rollouts = await self.score_group(engine, task, episodes, len(self.env.start(task)))
        return rollouts, sampled_at, time.perf_counter() - sampled_at

    async def produce(self, engine: ScoringEngine, start: int, queue: asyncio.Queue[Batch]) -> None:
        for step in range(start, self.config.steps):
            version, sampler = await self.board.at_least(step - self.config.sampling_ahead)
            begin = time.perf_counter()
            chosen = tasks_for_step(self.tasks, step, self.config.groups_per_step, self.config.seed)
            results = await asyncio.gather(
                *(self.sample_then_score(engine, sampler, step, g, t) for g, t in enumerate(chosen))
            )
            end = time.perf_counter()
            sampling_s = max(sampled_at for _, sampled_at, _ in results) - begin
            batch = Batch(
                step=step,
                groups=[rollouts for rollouts, _, _ in results],
                sampler_version=version,
                sampling_s=sampling_s,
                scoring_s=end - begin - sampling_s,
                scoring_busy_s=sum(busy for _, _, busy in results),
            )
            await queue.put(batch)

    # Training -----------------------------------------------------------------------

    async def warm_start(self) -> None:
        """A short cross_entropy warm start on example completions (format, not answers)."""
        from tinker import types

        if not self.config.warmup_steps:
            return
        datums: list[PackedDatum] = []
        for example in self.plan.warmup:
            prompt = self.renderer.prompt_tokens(self.env.start(example.task))
            datums.append(supervised(prompt, self.completion_tokens(example.completion)))
        lr = self.config.warmup_learning_rate or self.config.learning_rate
        rng = random.Random(self.config.seed)
        for step in range(self.config.warmup_steps):
            begin = time.perf_counter()
            chunk = rng.sample(datums, min(len(datums), 32))
            fb = self.training.forward_backward(
                [to_datum(d, "cross_entropy") for d in chunk], "cross_entropy"
            )
            opt = self.training.optim_step(types.AdamParams(learning_rate=lr))
            out = await fb
            await opt
            tokens = sum(sum(d.mask) for d in chunk)
            loss = out.metrics.get("loss:sum", 0.0) / max(tokens, 1)
            self.run.append(
                "metrics.jsonl",
                {
                    "step": -self.config.warmup_steps + step,
                    "phase": "warmup",
                    "loss": loss,
                    "time": {"training": time.perf_counter() - begin},
                },
            )
            progress(f"warm-up {step + 1}/{self.config.warmup_steps}  loss/token {loss:.3f}")

    def completion_tokens(self, text: str) -> list[int]:
        """A reference completion as the model would have to sample it, stop token included."""
        tokens: list[int] = self.training.get_tokenizer().encode(text, add_special_tokens=False)
        return tokens + self.renderer.stop()[:1]

    def build_datums(self, batch: Batch) -> tuple[list[PackedDatum], dict[str, Any]]:
        datums: list[PackedDatum] = []
        rewards_used: list[float] = []
        skipped = 0
        for group in batch.groups:
            kept: list[tuple[Rollout, float]] = []
            for rollout in group:
                if rollout.score.status.judged:
                    kept.append((rollout, rollout.score.reward))
                elif self.config.failed_scores == "zero":
                    kept.append((rollout, 0.0))
            rewards = [reward for _, reward in kept]
            if len(kept) < 2 or (self.config.skip_degenerate_groups and is_degenerate(rewards)):
                skipped += 1
                continue
            rewards_used.extend(rewards)
            advantages = group_advantages(rewards, self.config.advantage)
            for (rollout, _), advantage in zip(kept, advantages, strict=True):
                datums.append(pack(rollout.episode.segments, advantage))
        return datums, {"degenerate_groups_skipped": skipped}

    async def train_step(self, batch: Batch) -> dict[str, Any]:
        from tinker import types

        begin = time.perf_counter()
        packed, info = self.build_datums(batch)
        ratio_mean = kl = None
        if packed:
            fb = self.training.forward_backward(
                [to_datum(d, self.config.loss) for d in packed],
                self.config.loss,
                self.config.loss_config or None,
            )
            opt = self.training.optim_step(
                types.AdamParams(learning_rate=self.config.learning_rate)
            )
            output = await fb
            await opt
            ratio_mean, kl = drift(packed, output)
        info["training_s"] = time.perf_counter() - begin
        info["importance_ratio_mean"] = ratio_mean
        info["kl_sampler_trainer"] = kl
        info["datums"] = len(packed)
        return info

    def metrics_row(self, batch: Batch, info: dict[str, Any], wall: float) -> dict[str, Any]:
        rollouts = [r for g in batch.groups for r in g]
        scores = [r.score for r in rollouts]
        stats = reward_stats(scores)
        lengths = [
            sum(len(seg.tokens) for seg in r.episode.segments if seg.sampled) for r in rollouts
        ]
        return {
            "step": batch.step,
            "phase": "rl",
            **{f"reward_{name}": value for name, value in stats.items()},
            "components": component_means(scores),
            "status": status_counts(scores),
            "degenerate_groups_skipped": info["degenerate_groups_skipped"],
            "datums": info["datums"],
            "tokens_sampled": sum(lengths),
            "completion_length_mean": fmean(lengths) if lengths else 0.0,
            "turns_mean": fmean(r.episode.turns for r in rollouts) if rollouts else 0.0,
            "tool_calls_mean": (
                fmean(len(r.episode.tool_calls) for r in rollouts) if rollouts else 0.0
            ),
            "tool_call_errors": sum(
                1 for r in rollouts for call in r.episode.tool_calls if "error" in call
            ),
            "importance_ratio_mean": info["importance_ratio_mean"],
            "kl_sampler_trainer": info["kl_sampler_trainer"],
            "sampler_lag": batch.step - batch.sampler_version,
            "scoring_busy_s": batch.scoring_busy_s,
            "time": {
                "sampling": batch.sampling_s,
                "scoring": batch.scoring_s,
                "training": info["training_s"],
                "total": wall,
            },
        }

    def log_samples(self, batch: Batch) -> None:
        rollouts = [r for g in batch.groups for r in g][: self.config.samples_logged_per_step]
        for rollout in rollouts:
            self.run.append(
                "samples.jsonl",
                {
                    "step": batch.step,
                    "task_id": rollout.task.id,
                    "completion": rollout.episode.final_text,
                    "turns": rollout.episode.turns,
                    "reward": rollout.score.reward,
                    "status": rollout.score.status.value,
                    "components": rollout.score.components,
                    "error": rollout.score.error,
                },
            )

    async def save(self, step: int) -> None:
        result = await self.training.save_state(name=f"step-{step:06d}")
        self.run.append("checkpoints.jsonl", {"step": step, "path": result.path, "kind": "state"})

    async def loop(self, start: int) -> None:
        if start == 0:
            await self.warm_start()
        sampler = await self.training.save_weights_and_get_sampling_client()
        await self.board.publish(start, sampler)
        queue: asyncio.Queue[Batch] = asyncio.Queue(maxsize=max(1, self.config.sampling_ahead))
        executor = make_executor(self.config.executor, self.config.workers, self.config.ray_address)
        async with executor:
            engine = ScoringEngine(executor, keep_scores=False)
            producer = asyncio.create_task(self.produce(engine, start, queue))
            try:
                for step in range(start, self.config.steps):
                    begin = time.perf_counter()
                    batch = await next_batch(queue, producer)
                    waited = time.perf_counter() - begin
                    info = await self.train_step(batch)
                    row = self.metrics_row(batch, info, 0.0)
                    sampler = await self.training.save_weights_and_get_sampling_client()
                    await self.board.publish(step + 1, sampler)
                    done = step + 1
                    if done % self.config.save_every == 0 or done == self.config.steps:
                        await self.save(done)
                    row["time"]["total"] = time.perf_counter() - begin
                    row["time"]["waiting_for_batch"] = waited
                    self.run.append("metrics.jsonl", row)
                    self.log_samples(batch)
                    progress(step_line(row, self.config.steps))
                    self.check_failures(row)
            finally:
                producer.cancel()
                await asyncio.gather(producer, return_exceptions=True)

    def check_failures(self, row: dict[str, Any]) -> None:
        status = row["status"]
        total = sum(status.values())
        failed = status.get("timeout", 0) + status.get("error", 0)
        if total and failed / total > self.config.max_failed_share:
            raise UserError(
                f"step {row['step']}: {failed} of {total} samples could not be scored "
                f"(timeout/error), above max_failed_share={self.config.max_failed_share}; "
                f"see {self.run.path / 'samples.jsonl'} and the verifier's errors"
            )


async def next_batch(queue: asyncio.Queue[Batch], producer: asyncio.Task[None]) -> Batch:
    """The next batch, or the producer's exception if it failed first."""
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({getter, producer}, return_when=asyncio.FIRST_COMPLETED)
    if getter in done:
        return getter.result()
    getter.cancel()
    producer.result()  # raises the producer's error
    raise RuntimeError("sampling stopped before the run ended")


def server_words(exc: Exception) -> str:
    """The server's own message in an SDK error, without the SDK's request details."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    text = str(getattr(exc, "message", exc)).removeprefix("Request failed: ")
    return text.split(" for self.request_id=")[0]


def drift(packed: list[PackedDatum], output: Any) -> tuple[float | None, float | None]:
    """Mean importance ratio and KL(sampler || trainer) over sampled tokens (k3 estimator)."""
    ratios: list[float] = []
    kls: list[float] = []
    for datum, out in zip(packed, output.loss_fn_outputs, strict=True):
        trainer = out["logprobs"].tolist()
        for lp_train, lp_sample, mask in zip(trainer, datum.logprobs, datum.mask, strict=True):
            if mask:
                delta = lp_train - lp_sample
                ratios.append(math.exp(delta))
                kls.append(math.exp(delta) - 1 - delta)
    if not ratios:
        return None, None
    return fmean(ratios), fmean(kls)


def step_line(row: dict[str, Any], steps: int) -> str:
    reward = row["reward_mean"]
    shown = "-" if reward is None else f"{reward:.3f}"
    status = row["status"]
    filled = round(20 * (row["step"] + 1) / steps)
    return (
        f"[{'#' * filled}{'.' * (20 - filled)}] "
        f"step {row['step'] + 1}/{steps}  reward {shown}  ok {status['ok']} invalid "
        f"{status['invalid']} timeout {status['timeout']} error {status['error']}  "
        f"{row['time']['total']:.1f}s"
    )


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def resolve_run_dir(config: TrainConfig) -> Path:
    return Path(config.run_dir.replace("{time}", time.strftime("%Y%m%d-%H%M%S")))


async def train_async(config: TrainConfig, resume: Path | None = None) -> Path:
    """Validate everything, then create (or rewind) the run directory and train."""
    config = config.with_absolute_paths(Path.cwd())  # the echo names files from anywhere
    checkpoint = None
    if resume is not None:
        run = RunDir(resume)
        if not run.config_file.exists():
            raise UserError(f"{resume}: no run to resume (config.json missing)")
        checkpoint = run.last_checkpoint()
    else:
        run = RunDir(resolve_run_dir(config))
        run.refuse_existing()
    start = checkpoint["step"] if checkpoint else 0
    if start >= config.steps:
        progress(f"{run.path}: all {config.steps} steps are done")
        return run.path
    plan = prepare(config, warm_start=start == 0)  # nothing is created before this passes
    if resume is not None:
        run.rewind(start if checkpoint else -(10**9))  # no checkpoint: start over, warm-up too
    else:
        run.create(config.model_dump(mode="json"))
    resume_path = checkpoint["path"] if checkpoint else None
    with connect(config, run.path) as connection:
        trainer = Trainer(config, plan, run, connection)
        await trainer.open(resume_path)
        if start:
            progress(f"resuming {run.path} at step {start + 1} from {resume_path}")
        await trainer.loop(start)
    return run.path


def run(config: TrainConfig, resume: Path | None = None) -> Path:
    """Train; returns the run directory."""
    return asyncio.run(train_async(config, resume))
