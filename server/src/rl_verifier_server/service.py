"""What the server does for each Tinker call, independent of HTTP.

Torch work runs on one compute thread, in submission order; training requests of a
model are submitted in ``seq_id`` order. Results go to the future table, from which
``retrieve_future`` long-polls them. Requests are checked before any work is queued:
a malformed or over-limit request is a user error and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier.errors import UserError
from rl_verifier_server import fields
from rl_verifier_server.checkpoint_store import CheckpointRef, CheckpointStore
from rl_verifier_server.errors import StatusError
from rl_verifier_server.futures import FutureTable, Outcome
from rl_verifier_server.limits import Limits
from rl_verifier_server.models import AllowedModels, ModelHosts
from rl_verifier_server.names import check_name
from rl_verifier_server.ordering import SequencedQueue
from rl_verifier_server.runtime import LoraSpec
from rl_verifier_server.sample_request import SampleCall
from rl_verifier_server.sampler_table import ClientSampler, SamplerTable
from rl_verifier_server.sessions import Session, Sessions, now_iso
from rl_verifier_server.testhooks import pause_point
from rl_verifier_server.wire import (
    decode_forward_backward,
    encode_forward_backward,
    encode_samples,
)

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost

log = logging.getLogger("rl_verifier_server")
MAX_LORA_RANK = 1024


@dataclass
class TrainingModel:
    model_id: str
    session_id: str
    base_model: str
    host: ModelHost
    spec: LoraSpec
    queue: SequencedQueue
    adapter: str = ""
    last_request_time: str = field(default_factory=now_iso)
    released: bool = False


class Service:
    def __init__(
        self,
        data_dir: Path,
        device: str | None = None,
        *,
        limits: Limits | None = None,
        models: AllowedModels | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits or Limits()
        self.store = CheckpointStore(data_dir)
        self.hosts = ModelHosts(device, models)
        self.futures = FutureTable()
        self.sessions = Sessions(self.limits.session_timeout_s, clock)
        self.models: dict[str, TrainingModel] = {}
        self.samplers = SamplerTable(self.limits.max_samplers)
        self._creating: set[str] = set()  # model ids whose creation is queued
        self._compute = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlv-compute")
        self._tasks: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        self._compute.shutdown(wait=False, cancel_futures=True)

    # Plumbing -----------------------------------------------------------------------

    async def on_compute(self, work: Callable[[], Any]) -> Any:
        """Run ``work`` on the compute thread and return its value (direct endpoints)."""
        return await asyncio.get_running_loop().run_in_executor(self._compute, work)

    def dispatch(self, request_id: str, work: Callable[[], object]) -> None:
        """Queue ``work`` on the compute thread now; its outcome resolves the future."""
        pending = asyncio.get_running_loop().run_in_executor(self._compute, guarded(work))

        async def settle() -> None:
            outcome = await pending
            assert isinstance(outcome, Outcome)
            self.futures.resolve(request_id, outcome)

        task = asyncio.get_running_loop().create_task(settle())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def submit(self, kind: str, work: Callable[[], object]) -> str:
        request_id = self.futures.create(kind)
        self.dispatch(request_id, work)
        return request_id

    def submit_ordered(
        self, model: TrainingModel, seq_id: int, kind: str, work: Callable[[], object]
    ) -> str:
        model.last_request_time = now_iso()
        known = model.queue.lookup(seq_id)
        if known is not None:
            return known
        request_id = self.futures.create(kind)
        model.queue.add(seq_id, request_id, work)
        return request_id

    @contextlib.contextmanager
    def checking(self, model: TrainingModel, seq_id: int) -> Iterator[None]:
        """Checks of an ordered request: when one fails, its ``seq_id`` is given up, so the
        model's later requests do not wait for it."""
        try:
            yield
        except UserError:
            model.queue.void(seq_id)
            raise

    def model(self, model_id: object) -> TrainingModel:
        if not isinstance(model_id, str):
            raise UserError("the request needs 'model_id' (a string)")
        model = self.models.get(model_id)
        if model is None:
            raise UserError(
                f"unknown training client '{model_id}' (never created, from before a "
                "restart, or released when its session ended)"
            )
        session = self.sessions.find(model.session_id)
        if session is not None and not session.finished:
            session.last_seen = self.sessions.clock()
        return model

    def in_compute(self, work: Callable[[], None]) -> None:
        """Run ``work`` on the compute thread after what is queued there (no result)."""

        def run() -> Outcome:
            work()
            return Outcome()

        self._compute.submit(guarded(run))

    # Sessions -----------------------------------------------------------------------

    def create_session(self) -> str:
        return self.sessions.create()

    def heartbeat(self, request: dict[str, Any]) -> None:
        self.sessions.use(request.get("session_id"))

    def session(self, session_id: str) -> Session:
        session = self.sessions.find(session_id)
        if session is None:
            raise StatusError(f"unknown session '{session_id}'", status=404)
        return session

    def finish_session(self, session_id: str) -> None:
        """The client closed its session (again is fine)."""
        session = self.sessions.find(check_name(session_id, "session id"))
        if session is None or not session.finished:
            self.end_session(self.sessions.use(session_id))

    def end_session(self, session: Session) -> None:
        """Mark the session ended and release its training clients and samplers."""
        session.finished = True
        released = [self.models.pop(m) for m in session.models if m in self.models]
        for model in released:
            model.released = True

        def release() -> None:
            for model in released:
                if model.host.has_adapter(model.adapter):
                    model.host.drop_adapter(model.adapter)
            self.samplers.release_session(session.session_id)

        self.in_compute(release)

    def end_idle_sessions(self) -> int:
        """End sessions silent for longer than the timeout; how many were ended."""
        idle = self.sessions.idle()
        for session in idle:
            log.info(
                "session %s ended: nothing from it for %.0f s",
                session.session_id,
                self.sessions.timeout_s,
            )
            self.end_session(session)
        return len(idle)

    async def housekeeping(self) -> None:
        """End idle sessions, now and then, for as long as the server runs."""
        interval = max(1.0, min(30.0, self.sessions.timeout_s / 4))
        while True:
            await asyncio.sleep(interval)
            self.end_idle_sessions()

    # Training clients ---------------------------------------------------------------

    def _reserve_model(self, model_id: str) -> bool:
        """Count a new training client against the limit; False when it already exists."""
        if model_id in self.models or model_id in self._creating:
            return False
        live = len(self.models) + len(self._creating)
        if live >= self.limits.max_training_clients:
            raise StatusError(
                f"this server already holds {live} training clients, its limit "
                "(rlv serve --max-training-clients); they are released when their "
                "sessions end",
                status=429,
            )
        self._creating.add(model_id)
        return True

    def _register(
        self, model_id: str, session: Session, base: str, host: ModelHost, spec: LoraSpec
    ) -> None:
        queue = SequencedQueue(self.dispatch, first=1)
        self.models[model_id] = TrainingModel(
            model_id, session.session_id, base, host, spec, queue, slot("m", model_id)
        )
        session.models.append(model_id)

    def _new_model_id(self, session: Session, request: dict[str, Any]) -> str:
        seq = fields.integer(request, "model_seq_id", minimum=0)
        return check_name(f"{session.session_id}:train:{seq}", "training run id")

    def _creation(
        self,
        model_id: str,
        session: Session,
        make: Callable[[], tuple[str, ModelHost, LoraSpec]],
        answer: dict[str, Any],
    ) -> Callable[[], Outcome]:
        """Work that creates the training client once (re-sent requests find it)."""
        reserved = self._reserve_model(model_id)

        def work() -> Outcome:
            try:
                if model_id not in self.models:
                    if session.finished:
                        raise StatusError(f"session '{session.session_id}' has ended", 410)
                    base, host, spec = make()
                    self._register(model_id, session, base, host, spec)
            finally:
                if reserved:
                    self._creating.discard(model_id)
            return Outcome(json=answer)

        return work

    def create_model(self, request: dict[str, Any]) -> str:
        session = self.sessions.use(request.get("session_id"))
        model_id = self._new_model_id(session, request)
        lora = fields.mapping(request, "lora_config")
        spec = LoraSpec(
            rank=fields.integer(lora, "rank", 32, minimum=1),
            seed=fields.integer(lora, "seed", None),
            train_mlp=fields.flag(lora, "train_mlp", True),
            train_attn=fields.flag(lora, "train_attn", True),
            train_unembed=fields.flag(lora, "train_unembed", True),
        )
        if spec.rank > MAX_LORA_RANK:
            raise UserError(f"LoRA rank must be at most {MAX_LORA_RANK}, got {spec.rank}")
        optimizer = fields.text(fields.mapping(request, "optimizer_config"), "type", "adamw")
        if optimizer != "adamw":
            raise UserError(f"optimizer '{optimizer}' is not supported; use adamw")
        base = request.get("base_model")
        self.hosts.check(base)

        def make() -> tuple[str, ModelHost, LoraSpec]:
            host = self.hosts.get(base)
            host.create_adapter(slot("m", model_id), spec)
            return str(base), host, spec

        answer = {"model_id": model_id, "type": "create_model"}
        return self.submit("CreateModel", self._creation(model_id, session, make, answer))

    def get_info(self, request: dict[str, Any]) -> dict[str, Any]:
        model = self.model(request.get("model_id"))
        directory = str(self.hosts.directory_of(model.host))
        return {
            "model_id": model.model_id,
            "model_data": {"model_name": directory, "tokenizer_id": directory, "arch": None},
            "is_lora": True,
            "lora_rank": model.spec.rank,
            "optimizer_config": {"type": "adamw"},
        }

    def forward_backward(self, body: bytes) -> str:
        call = decode_forward_backward(body)
        model = self.model(call.model_id)
        with self.checking(model, call.seq_id):
            if not call.data:
                raise UserError("forward_backward needs at least one datum")
        kind = "Forward" if call.forward_only else "ForwardBackward"

        def work() -> Outcome:
            live(model)
            result = model.host.forward_backward(
                model.adapter, call.data, call.loss_fn, call.config, backward=not call.forward_only
            )
            return Outcome(proto=encode_forward_backward(result))

        return self.submit_ordered(model, call.seq_id, kind, work)

    def optim_step(self, request: dict[str, Any]) -> str:
        model = self.model(request.get("model_id"))
        seq_id = fields.integer(request, "seq_id")
        with self.checking(model, seq_id):
            adam = fields.mapping(request, "adam_params")
            if not adam:
                raise UserError("only AdamParams are supported by optim_step")
            params = {
                "learning_rate": fields.number(adam, "learning_rate"),
                "beta1": fields.number(adam, "beta1", 0.9),
                "beta2": fields.number(adam, "beta2", 0.95),
                "eps": fields.number(adam, "eps", 1e-12),
                "weight_decay": fields.number(adam, "weight_decay", 0.0),
                "grad_clip_norm": fields.number(adam, "grad_clip_norm", 0.0),
            }

        def work() -> Outcome:
            live(model)
            metrics = model.host.optim_step(model.adapter, **params)
            pause_point("optim_step", model.model_id)
            return Outcome(json={"metrics": metrics, "type": "optim_step"})

        return self.submit_ordered(model, seq_id, "OptimStep", work)

    def _meta(self, model: TrainingModel) -> dict[str, Any]:
        return {"base_model": model.base_model, "lora": model.spec.to_json(), "run": model.model_id}

    def save_weights(self, request: dict[str, Any]) -> str:
        model = self.model(request.get("model_id"))
        seq_id = fields.integer(request, "seq_id")
        with self.checking(model, seq_id):
            name = fields.text(request, "path", f"seq{seq_id}")
            ref = CheckpointRef.of(model.model_id, "weights", name)
            overwrite = fields.flag(request, "overwrite", False)
            self.store.directory(ref)

        def work() -> Outcome:
            live(model)
            with self.store.writing(ref, self._meta(model), overwrite) as staging:
                model.host.save_state(model.adapter, staging, with_optimizer=True)
            return Outcome(json={"path": ref.uri, "type": "save_weights"})

        return self.submit_ordered(model, seq_id, "SaveWeights", work)

    def save_weights_for_sampler(self, request: dict[str, Any]) -> str:
        model = self.model(request.get("model_id"))
        seq_id = fields.integer(request, "seq_id")
        with self.checking(model, seq_id):
            name = fields.text(request, "path", None)
            sampler_seq = fields.integer(request, "sampling_session_seq_id", None, minimum=0)
            if name is not None:
                ref = CheckpointRef.of(model.model_id, "sampler_weights", name)
                self.store.directory(ref)
            elif sampler_seq is None:
                raise UserError(
                    "save_weights_for_sampler needs a path or a sampling_session_seq_id"
                )

        def save_named() -> Outcome:
            live(model)
            sampler_slot = slot("p", ref.uri)
            try:
                with self.store.writing(ref, self._meta(model), overwrite=True) as staging:
                    model.host.snapshot_sampler(model.adapter, sampler_slot, staging)
            except BaseException:
                if model.host.has_sampler(sampler_slot):
                    model.host.drop_sampler(sampler_slot)
                raise
            model.host.relocate_sampler(sampler_slot, self.store.directory(ref))
            self._add_sampler(ref.uri, model.session_id, model.host, sampler_slot, ref.uri)
            return Outcome(json={"path": ref.uri, "type": "save_weights_for_sampler"})

        def snapshot() -> Outcome:
            live(model)
            sampler_id = f"{model.session_id}:sample:{sampler_seq}"
            model.host.snapshot_sampler(model.adapter, slot("p", sampler_id), None)
            self._add_sampler(sampler_id, model.session_id, model.host, slot("p", sampler_id), None)
            return Outcome(json={"sampling_session_id": sampler_id, "path": None})

        work = save_named if name is not None else snapshot
        return self.submit_ordered(model, seq_id, "SaveWeightsForSampler", work)

    def load_weights(self, request: dict[str, Any]) -> str:
        with_optimizer = fields.flag(request, "optimizer", False)
        if request.get("model_id") is not None:
            model = self.model(request.get("model_id"))
            seq_id = fields.integer(request, "seq_id")
            with self.checking(model, seq_id):
                ref = self._checkpoint(request.get("path"), with_optimizer)

            def load_into() -> Outcome:
                live(model)
                self.store.read_meta(ref)
                model.host.load_state(model.adapter, self.store.directory(ref), with_optimizer)
                return Outcome(json={"path": ref.uri, "model_id": model.model_id})

            return self.submit_ordered(model, seq_id, "LoadWeights", load_into)
        ref = self._checkpoint(request.get("path"), with_optimizer)
        session = self.sessions.use(request.get("session_id"))
        model_id = self._new_model_id(session, request)
        base_request = fields.text(request, "base_model", None)
        if base_request is not None:
            self.hosts.check(base_request)

        def make() -> tuple[str, ModelHost, LoraSpec]:
            base = base_request or self.store.read_meta(ref)["base_model"]
            host = self.hosts.get(base)
            spec = host.create_adapter_from_state(
                slot("m", model_id), self.store.directory(ref), with_optimizer
            )
            return base, host, spec

        answer = {"path": ref.uri, "model_id": model_id}
        return self.submit("LoadWeights", self._creation(model_id, session, make, answer))

    def _checkpoint(self, path: object, with_optimizer: bool) -> CheckpointRef:
        ref = CheckpointRef.parse(path)
        self.store.directory(ref)
        if with_optimizer and ref.kind != "weights":
            raise UserError(f"{ref.uri} holds sampler weights only, no optimizer state")
        return ref

    # Sampling -----------------------------------------------------------------------

    def _add_sampler(
        self,
        sampler_id: str,
        session_id: str,
        host: ModelHost,
        adapter: str | None,
        path: str | None,
    ) -> None:
        self.samplers.add(ClientSampler(sampler_id, session_id, host, adapter, path))

    async def create_sampling_session(self, request: dict[str, Any]) -> str:
        session = self.sessions.use(request.get("session_id"))
        seq = fields.integer(request, "sampling_session_seq_id", minimum=0)
        sampler_id = f"{session.session_id}:sample:{seq}"
        model_path, base_model = self._sampler_source(request)
        await self.on_compute(
            lambda: self._open_sampler(sampler_id, session.session_id, model_path, base_model)
        )
        return sampler_id

    def _sampler_source(self, request: dict[str, Any]) -> tuple[CheckpointRef | None, str | None]:
        path = fields.text(request, "model_path", None)
        base_model = fields.text(request, "base_model", None)
        ref = CheckpointRef.parse(path) if path else None
        if ref is not None:
            self.store.directory(ref)
        if base_model is not None:
            self.hosts.check(base_model)
        if ref is None and not base_model:
            raise UserError("sampling needs a sampling_session_id, a model_path or a base_model")
        return ref, base_model

    def _open_sampler(
        self, sampler_id: str, session_id: str, ref: CheckpointRef | None, base_model: str | None
    ) -> None:
        if ref is not None:
            meta = self.store.read_meta(ref)
            host = self.hosts.get(base_model or meta["base_model"])
            host.load_sampler(slot("p", sampler_id), self.store.directory(ref))
            self._add_sampler(sampler_id, session_id, host, slot("p", sampler_id), ref.uri)
        else:
            self._add_sampler(sampler_id, session_id, self.hosts.get(base_model), None, None)

    def sampler_info(self, sampler_id: str) -> dict[str, Any]:
        sampler = self.samplers.get(sampler_id)
        return {
            "sampler_id": sampler_id,
            "base_model": str(self.hosts.directory_of(sampler.host)),
            "model_path": sampler.model_path,
        }

    def asample(self, request: dict[str, Any]) -> tuple[str, list[str]]:
        call = SampleCall.parse(request, self.limits)
        sampler_id = fields.text(request, "sampling_session_id", None)
        if sampler_id is not None:
            self.samplers.get(sampler_id)
            source: tuple[CheckpointRef | None, str | None] = (None, None)
        else:
            source = self._sampler_source(request)

        def work() -> Outcome:
            sampler = self._sampler_for(sampler_id, *source)
            sequences = sampler.host.sample(
                sampler.adapter,
                call.tokens,
                num_samples=call.num_samples,
                max_tokens=call.max_tokens,
                temperature=call.temperature,
                top_p=call.top_p,
                top_k=call.top_k,
                stop=call.stop,
                seed=call.seed,
            )
            prompt_lps = (
                sampler.host.prompt_logprobs(sampler.adapter, call.tokens)
                if call.prompt_logprobs
                else None
            )
            return Outcome(proto=encode_samples(sequences, prompt_lps))

        request_id = self.submit("Sample", work)
        return request_id, [f"{request_id}:{i}" for i in range(call.num_samples)]

    def _sampler_for(
        self, sampler_id: str | None, ref: CheckpointRef | None, base_model: str | None
    ) -> ClientSampler:
        """The sampler a request names, most recently used from now on."""
        if sampler_id is None:  # ad hoc, by checkpoint or base model
            sampler_id = ref.uri if ref is not None else f"base:{base_model}"
            if sampler_id not in self.samplers:
                self._open_sampler(sampler_id, "adhoc", ref, base_model)
        return self.samplers.use(sampler_id)


def live(model: TrainingModel) -> None:
    if model.released:
        raise UserError(f"training client '{model.model_id}' was released: its session ended")


def slot(prefix: str, key: str) -> str:
    """A safe internal adapter name for an external id (ids hold ':' and '/')."""
    return prefix + hashlib.sha1(key.encode()).hexdigest()[:16]


def guarded(work: Callable[[], object]) -> Callable[[], Outcome]:
    """Turn exceptions into error outcomes: user faults as ``user``, the rest as ``server``."""

    def run() -> Outcome:
        try:
            outcome = work()
        except UserError as exc:
            return Outcome(error=str(exc), category="user")
        except Exception as exc:
            log.exception("request failed")
            return Outcome(error=f"internal error: {type(exc).__name__}: {exc}", category="server")
        assert isinstance(outcome, Outcome)
        return outcome

    return run
