"""The RL loop: train the LoRA policy on each batch of scored rollouts, publish the new
weights for sampling, save checkpoints, and log (see rollouts, datums and metrics)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rl_verifier.base.errors import UserError
from rl_verifier.discovery.losses import CROSS_ENTROPY
from rl_verifier.scoring.engine import ScoringEngine, make_executor
from rl_verifier.train.backend import Connection, connect
from rl_verifier.train.config import TrainConfig, TrainingBackend
from rl_verifier.train.datums import build_datums, drift
from rl_verifier.train.environments import Turn, run_episode
from rl_verifier.train.held_out import (
    Stage,
    base_eval_due,
    due,
    eval_line,
    held_out_eval,
    stage_of,
)
from rl_verifier.train.metrics import (
    StepResult,
    check_failures,
    metrics_row,
    progress,
    sample_rows,
    step_line,
)
from rl_verifier.train.packing import PackedDatum, pack, supervised, to_datum
from rl_verifier.train.preflight import Plan, WarmupExample, prepare
from rl_verifier.train.renderer import Renderer
from rl_verifier.train.rollouts import (
    Batch,
    RolloutProducer,
    SamplerBoard,
    next_batch,
)
from rl_verifier.train.rundir import CHECKPOINTS, EVAL_SAMPLES, METRICS, SAMPLES, RunDir

if TYPE_CHECKING:
    import tinker

log = logging.getLogger(__name__)
SessionEnd = Literal["success", "errored", "interrupted"]  # the SDK's finish reasons
SESSION_CLOSE_TIMEOUT_S = 30.0  # a server that does not answer must not hold up the exit


class Trainer:
    """Owns the training client: warm start, training steps, weights for sampling, saves."""

    def __init__(
        self, config: TrainConfig, plan: Plan, run: RunDir, connection: Connection
    ) -> None:
        self.config = config
        self.plan = plan
        self.run = run
        self.connection = connection
        self.board = SamplerBoard()
        self.service: tinker.ServiceClient | None = None  # the session, once opened
        self.engine: ScoringEngine | None = None  # the loop's, once it runs

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
                local = self.config.backend == TrainingBackend.LOCAL
                where = f" (server log: {self.run.server_log})" if local else ""
                raise UserError(
                    f"could not start training base model '{self.config.base_model}': "
                    f"{server_words(exc)}{where}"
                ) from None
        self.renderer = Renderer(self.training.get_tokenizer())

    async def close(self, outcome: SessionEnd) -> None:
        """Finish the session on the server, so hosted Tinker releases it now rather than
        when its heartbeat lapses, and stop the SDK's heartbeat. A failure is logged only:
        the run's own outcome stands."""
        if self.service is None or self.connection.server_ended():
            return  # nothing answers there any more
        try:
            await asyncio.wait_for(self.service.close(outcome), SESSION_CLOSE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - closing is best effort, never the error
            log.warning("could not close the training session: %s", str(exc) or repr(exc))

    async def warm_start(self) -> None:
        """A short cross_entropy warm start on example completions (format, not answers)."""
        from tinker import types

        if not self.config.warmup_steps:
            return
        datums: list[PackedDatum] = []
        for example in self.plan.warmup:
            if len(example.replies) == 1:
                prompt = self.renderer.prompt_tokens(self.plan.env.start(example.task))
                datums.append(supervised(prompt, self.completion_tokens(example.replies[0])))
            else:
                datums.append(await self.replayed(example))
        lr = self.config.warmup_learning_rate or self.config.learning_rate
        rng = random.Random(self.config.seed)
        for step in range(self.config.warmup_steps):
            begin = time.perf_counter()
            chunk = rng.sample(datums, min(len(datums), 32))
            fb = self.training.forward_backward(
                [to_datum(d, CROSS_ENTROPY) for d in chunk], CROSS_ENTROPY
            )
            opt = self.training.optim_step(types.AdamParams(learning_rate=lr))
            out = await fb
            await opt
            tokens = sum(sum(d.mask) for d in chunk)
            loss = out.metrics.get("loss:sum", 0.0) / max(tokens, 1)
            self.run.append(
                METRICS,
                {
                    "step": -self.config.warmup_steps + step,
                    "phase": "warmup",
                    "loss": loss,
                    "time": {"training": time.perf_counter() - begin},
                },
            )
            progress(f"warm-up {step + 1}/{self.config.warmup_steps}  loss/token {loss:.3f}")

    async def replayed(self, example: WarmupExample) -> PackedDatum:
        """A multi-turn warm-up example as a cross_entropy datum: its assistant turns are
        replayed through the run's environment (which runs the tools), and only the replies'
        tokens are trained on; tool output and the prompt are masked."""
        replies = iter(example.replies)

        async def scripted(_tokens: list[int]) -> Turn:
            text = next(replies, None)
            if text is None:
                raise UserError(
                    f"warm-up example of task '{example.task.id}': the environment asked for "
                    f"more than its {len(example.replies)} assistant turns"
                )
            sampled = self.completion_tokens(text)
            return Turn(sampled, [0.0] * len(sampled), text)

        episode = await run_episode(
            self.plan.env, example.task, self.renderer, scripted, self.config.max_context
        )
        if episode.turns != len(example.replies):
            raise UserError(
                f"warm-up example of task '{example.task.id}': the environment ended the "
                f"episode after {episode.turns} of its {len(example.replies)} assistant turns"
            )
        return pack(episode.segments, advantage=0.0)

    def completion_tokens(self, text: str) -> list[int]:
        """A reference completion as the model would have to sample it, stop token included."""
        tokens: list[int] = self.training.get_tokenizer().encode(text, add_special_tokens=False)
        return tokens + self.renderer.stop()[:1]

    async def train_step(self, batch: Batch) -> StepResult:
        from tinker import types

        begin = time.perf_counter()
        packed, skipped = build_datums(batch, self.config)
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
        return StepResult(len(packed), skipped, time.perf_counter() - begin, ratio_mean, kl)

    async def save(self, step: int) -> None:
        result = await self.training.save_state(name=f"step-{step:06d}")
        self.run.append(CHECKPOINTS, {"step": step, "path": result.path, "kind": "state"})

    async def loop(self, start: int) -> None:
        executor = make_executor(self.config.executor, self.config.workers, self.config.ray_address)
        async with executor:
            engine = ScoringEngine(executor, keep_scores=False)
            self.engine = engine
            if start == 0:
                if base_eval_due(self.config):  # the base model, before the warm start
                    base = await self.training.save_weights_and_get_sampling_client()
                    await self.evaluate(base, 0, "base")
                await self.warm_start()
            sampler = await self.training.save_weights_and_get_sampling_client()
            await self.board.publish(start, sampler)
            queue: asyncio.Queue[Batch] = asyncio.Queue(maxsize=max(1, self.config.sampling_ahead))
            producer = RolloutProducer(self.config, self.plan, self.renderer, self.board)
            await self.held_out(start, unless_logged=True)  # a kill may have lost it
            producing = asyncio.create_task(producer.produce(engine, start, queue))
            try:
                for step in range(start, self.config.steps):
                    await self.step(step, queue, producing)
            finally:
                producing.cancel()
                await asyncio.gather(producing, return_exceptions=True)

    async def step(
        self, step: int, queue: asyncio.Queue[Batch], producing: asyncio.Task[None]
    ) -> None:
        """Train on the step's batch, publish the weights, save, log."""
        begin = time.perf_counter()
        batch = await next_batch(queue, producing)
        waited = time.perf_counter() - begin
        result = await self.train_step(batch)
        sampler = await self.training.save_weights_and_get_sampling_client()
        await self.board.publish(step + 1, sampler)
        row = metrics_row(batch, result, waited, time.perf_counter() - begin)
        # The step's rows go first, its checkpoint after: a run killed in between resumes
        # from the checkpoint before, whose rewind drops these rows, so no step goes missing.
        self.run.append(METRICS, row)
        for sample in sample_rows(batch, self.config.samples_logged_per_step):
            self.run.append(SAMPLES, sample)
        done = step + 1
        if done % self.config.save_every == 0 or done == self.config.steps:
            await self.save(done)
        progress(step_line(row, self.config.steps))
        check_failures(row, self.config.max_failed_share, self.run.path)
        await self.held_out(done)

    async def held_out(self, done: int, unless_logged: bool = False) -> None:
        """Evaluate the weights after ``done`` steps on the held-out tasks, when due. The
        row goes after the step's rows and checkpoint: a resume from that checkpoint keeps
        it, one from an earlier checkpoint rewinds it away with the step."""
        if not due(self.config, done):
            return
        stage = stage_of(self.config, done)
        if unless_logged and any(
            row.get("phase") == "eval"
            and row.get("trained_steps") == done
            and row.get("stage", stage) == stage
            for row in self.run.rows(METRICS)
        ):
            return
        await self.evaluate(self.board.client, done, stage)

    async def evaluate(self, client: tinker.SamplingClient, done: int, stage: Stage) -> None:
        """One held-out eval of ``client``'s weights, logged with its samples."""
        assert self.engine is not None  # set by loop()
        row, samples = await held_out_eval(
            self.config, self.plan, self.renderer, client, self.engine, done, stage
        )
        self.run.append(METRICS, row)
        for sample in samples:
            self.run.append(EVAL_SAMPLES, sample)
        progress(eval_line(row))


def server_words(exc: Exception) -> str:
    """The server's own message in an SDK error, without the SDK's request details."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    text = str(getattr(exc, "message", exc)).removeprefix("Request failed: ")
    return text.split(" for self.request_id=")[0]


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
        outcome: SessionEnd = "errored"
        try:
            await trainer.open(resume_path)
            if start:
                progress(f"resuming {run.path} at step {start + 1} from {resume_path}")
            await trainer.loop(start)
            outcome = "success"
        except (KeyboardInterrupt, asyncio.CancelledError):
            outcome = "interrupted"
            raise
        finally:
            await trainer.close(outcome)
    return run.path


def run(config: TrainConfig, resume: Path | None = None) -> Path:
    """Train; returns the run directory."""
    return asyncio.run(train_async(config, resume))
