"""What the server does for each Tinker call, independent of HTTP.

Torch work runs on one compute thread, in submission order; training requests of a
model are submitted in ``seq_id`` order. Results go to the future table, from which
``retrieve_future`` long-polls them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rl_verifier_server.checkpoints import CheckpointRef, CheckpointStore
from rl_verifier_server.futures import FutureTable, Outcome
from rl_verifier_server.models import ModelHosts
from rl_verifier_server.ordering import SequencedQueue
from rl_verifier_server.runtime import LoraSpec, ModelHost, UserInputError
from rl_verifier_server.wire import (
    decode_forward_backward,
    encode_forward_backward,
    encode_samples,
)

log = logging.getLogger("rl_verifier_server")


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


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


@dataclass
class Sampler:
    sampler_id: str
    host: ModelHost
    adapter: str | None  # None: the base model itself
    model_path: str | None


@dataclass
class Session:
    session_id: str
    created: str = field(default_factory=now_iso)
    finished: bool = False
    models: list[str] = field(default_factory=list)
    samplers: list[str] = field(default_factory=list)


class Service:
    def __init__(self, data_dir: Path, device: str | None = None) -> None:
        self.store = CheckpointStore(data_dir)
        self.hosts = ModelHosts(device)
        self.futures = FutureTable()
        self.sessions: dict[str, Session] = {}
        self.models: dict[str, TrainingModel] = {}
        self.samplers: dict[str, Sampler] = {}
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
        self, model_id: str, seq_id: int, kind: str, work: Callable[[], object]
    ) -> str:
        model = self.model(model_id)
        model.last_request_time = now_iso()
        known = model.queue.lookup(seq_id)
        if known is not None:
            return known
        request_id = self.futures.create(kind)
        model.queue.add(seq_id, request_id, work)
        return request_id

    def model(self, model_id: str) -> TrainingModel:
        model = self.models.get(model_id)
        if model is None:
            raise UserInputError(f"unknown model '{model_id}'")
        return model

    def session(self, session_id: str) -> Session:
        if session_id not in self.sessions:  # a session from before a restart
            self.sessions[session_id] = Session(session_id)
        return self.sessions[session_id]

    # Sessions -----------------------------------------------------------------------

    def create_session(self) -> str:
        session_id = "s" + uuid.uuid4().hex[:12]
        self.sessions[session_id] = Session(session_id)
        return session_id

    def finish_session(self, session_id: str) -> None:
        self.session(session_id).finished = True

    # Training clients ---------------------------------------------------------------

    def _register(
        self, model_id: str, session_id: str, base: str, host: ModelHost, spec: LoraSpec
    ) -> None:
        queue = SequencedQueue(self.dispatch, first=1)
        self.models[model_id] = TrainingModel(
            model_id, session_id, base, host, spec, queue, slot("m", model_id)
        )
        self.session(session_id).models.append(model_id)

    def create_model(self, request: dict[str, Any]) -> str:
        session_id = request["session_id"]
        model_id = f"{session_id}:train:{request['model_seq_id']}"
        lora = request.get("lora_config") or {}
        spec = LoraSpec(
            rank=int(lora.get("rank", 32)),
            seed=lora.get("seed"),
            train_mlp=bool(lora.get("train_mlp", True)),
            train_attn=bool(lora.get("train_attn", True)),
            train_unembed=bool(lora.get("train_unembed", True)),
        )
        optimizer = (request.get("optimizer_config") or {}).get("type", "adamw")
        base = request["base_model"]

        def work() -> Outcome:
            if spec.rank < 1:
                raise UserInputError(f"LoRA rank must be at least 1, got {spec.rank}")
            if optimizer != "adamw":
                raise UserInputError(f"optimizer '{optimizer}' is not supported; use adamw")
            host = self.hosts.get(base)
            if model_id not in self.models:
                host.create_adapter(slot("m", model_id), spec)
                self._register(model_id, session_id, base, host, spec)
            return Outcome(json={"model_id": model_id, "type": "create_model"})

        return self.submit("CreateModel", work)

    def get_info(self, model_id: str) -> dict[str, Any]:
        model = self.model(model_id)
        directory = str(self.hosts.directory_of(model.host))
        return {
            "model_id": model_id,
            "model_data": {"model_name": directory, "tokenizer_id": directory, "arch": None},
            "is_lora": True,
            "lora_rank": model.spec.rank,
            "optimizer_config": {"type": "adamw"},
        }

    def forward_backward(self, body: bytes) -> str:
        call = decode_forward_backward(body)
        if not call.data:
            raise UserInputError("forward_backward needs at least one datum")
        kind = "Forward" if call.forward_only else "ForwardBackward"
        model = self.model(call.model_id)

        def work() -> Outcome:
            result = model.host.forward_backward(
                model.adapter, call.data, call.loss_fn, call.config, backward=not call.forward_only
            )
            return Outcome(proto=encode_forward_backward(result))

        return self.submit_ordered(call.model_id, call.seq_id, kind, work)

    def optim_step(self, request: dict[str, Any]) -> str:
        model = self.model(request["model_id"])
        adam = request.get("adam_params")

        def work() -> Outcome:
            if not adam:
                raise UserInputError("only AdamParams are supported by optim_step")
            metrics = model.host.optim_step(
                model.adapter,
                learning_rate=float(adam["learning_rate"]),
                beta1=float(adam.get("beta1", 0.9)),
                beta2=float(adam.get("beta2", 0.95)),
                eps=float(adam.get("eps", 1e-12)),
                weight_decay=float(adam.get("weight_decay", 0.0)),
                grad_clip_norm=float(adam.get("grad_clip_norm", 0.0)),
            )
            return Outcome(json={"metrics": metrics, "type": "optim_step"})

        return self.submit_ordered(model.model_id, int(request["seq_id"]), "OptimStep", work)

    def _meta(self, model: TrainingModel) -> dict[str, Any]:
        return {"base_model": model.base_model, "lora": model.spec.to_json(), "run": model.model_id}

    def save_weights(self, request: dict[str, Any]) -> str:
        model = self.model(request["model_id"])
        seq_id = int(request["seq_id"])
        name = request.get("path") or f"seq{seq_id}"
        overwrite = bool(request.get("overwrite", False))

        def work() -> Outcome:
            ref = self.store.new(model.model_id, "weights", name, overwrite)
            model.host.save_state(model.adapter, self.store.directory(ref), with_optimizer=True)
            self.store.write_meta(ref, self._meta(model))
            return Outcome(json={"path": ref.uri, "type": "save_weights"})

        return self.submit_ordered(model.model_id, seq_id, "SaveWeights", work)

    def save_weights_for_sampler(self, request: dict[str, Any]) -> str:
        model = self.model(request["model_id"])
        seq_id = int(request["seq_id"])
        name = request.get("path")
        sampler_seq = request.get("sampling_session_seq_id")

        def work() -> Outcome:
            if name:
                ref = self.store.new(model.model_id, "sampler_weights", name, overwrite=True)
                directory = self.store.directory(ref)
                model.host.snapshot_sampler(model.adapter, slot("p", ref.uri), directory)
                self.store.write_meta(ref, self._meta(model))
                self._add_sampler(
                    ref.uri, model.session_id, model.host, slot("p", ref.uri), ref.uri
                )
                return Outcome(json={"path": ref.uri, "type": "save_weights_for_sampler"})
            if sampler_seq is None:
                raise UserInputError(
                    "save_weights_for_sampler needs a path or a sampling_session_seq_id"
                )
            sampler_id = f"{model.session_id}:sample:{sampler_seq}"
            model.host.snapshot_sampler(model.adapter, slot("p", sampler_id), None)
            self._add_sampler(sampler_id, model.session_id, model.host, slot("p", sampler_id), None)
            return Outcome(json={"sampling_session_id": sampler_id, "path": None})

        return self.submit_ordered(model.model_id, seq_id, "SaveWeightsForSampler", work)

    def load_weights(self, request: dict[str, Any]) -> str:
        ref = CheckpointRef.parse(request["path"])
        with_optimizer = bool(request.get("optimizer", False))
        if request.get("model_id"):
            model = self.model(request["model_id"])

            def load_into() -> Outcome:
                self._check_optimizer(ref, with_optimizer)
                model.host.load_state(model.adapter, self.store.directory(ref), with_optimizer)
                return Outcome(json={"path": ref.uri, "model_id": model.model_id})

            return self.submit_ordered(
                model.model_id, int(request["seq_id"]), "LoadWeights", load_into
            )
        session_id = request["session_id"]
        model_id = f"{session_id}:train:{request['model_seq_id']}"

        def create_from() -> Outcome:
            self._check_optimizer(ref, with_optimizer)
            meta = self.store.read_meta(ref)
            base = request.get("base_model") or meta["base_model"]
            host = self.hosts.get(base)
            if model_id not in self.models:
                spec = host.create_adapter_from_state(
                    slot("m", model_id), self.store.directory(ref), with_optimizer
                )
                self._register(model_id, session_id, base, host, spec)
            return Outcome(json={"path": ref.uri, "model_id": model_id})

        return self.submit("LoadWeights", create_from)

    def _check_optimizer(self, ref: CheckpointRef, with_optimizer: bool) -> None:
        if with_optimizer and ref.kind != "weights":
            raise UserInputError(f"{ref.uri} holds sampler weights only, no optimizer state")

    # Sampling -----------------------------------------------------------------------

    def _add_sampler(
        self,
        sampler_id: str,
        session_id: str,
        host: ModelHost,
        adapter: str | None,
        path: str | None,
    ) -> None:
        self.samplers[sampler_id] = Sampler(sampler_id, host, adapter, path)
        self.session(session_id).samplers.append(sampler_id)

    async def create_sampling_session(self, request: dict[str, Any]) -> str:
        session_id = request["session_id"]
        sampler_id = f"{session_id}:sample:{request['sampling_session_seq_id']}"
        await self.on_compute(lambda: self._open_sampler(sampler_id, session_id, request))
        return sampler_id

    def _open_sampler(self, sampler_id: str, session_id: str, request: dict[str, Any]) -> None:
        path = request.get("model_path")
        if path:
            ref = CheckpointRef.parse(path)
            meta = self.store.read_meta(ref)
            host = self.hosts.get(request.get("base_model") or meta["base_model"])
            host.load_sampler(slot("p", sampler_id), self.store.directory(ref))
            self._add_sampler(sampler_id, session_id, host, slot("p", sampler_id), ref.uri)
        elif request.get("base_model"):
            self._add_sampler(
                sampler_id, session_id, self.hosts.get(request["base_model"]), None, None
            )
        else:
            raise UserInputError("create_sampling_session needs a model_path or a base_model")

    def sampler_info(self, sampler_id: str) -> dict[str, Any]:
        sampler = self.samplers.get(sampler_id)
        if sampler is None:
            raise UserInputError(f"unknown sampler '{sampler_id}'")
        return {
            "sampler_id": sampler_id,
            "base_model": str(self.hosts.directory_of(sampler.host)),
            "model_path": sampler.model_path,
        }

    def asample(self, request: dict[str, Any]) -> tuple[str, list[str]]:
        count = int(request.get("num_samples", 1))
        if count < 1:
            raise UserInputError(f"num_samples must be at least 1, got {count}")
        for key in ("topk_prompt_logprobs", "topk_sample_logprobs", "prompt_alt_tokens_k"):
            if request.get(key):
                raise UserInputError(f"'{key}' is not supported by rlv serve")
        if request.get("target_prompt_logprobs") is not None:
            raise UserInputError("'target_prompt_logprobs' is not supported by rlv serve")
        tokens = prompt_tokens(request.get("prompt") or {})
        params = request.get("sampling_params") or {}
        want_prompt_logprobs = bool(request.get("prompt_logprobs"))
        sampler_id = request.get("sampling_session_id")

        def work() -> Outcome:
            sampler = self._sampler_for(sampler_id, request)
            stop = params.get("stop")
            sequences = sampler.host.sample(
                sampler.adapter,
                tokens,
                num_samples=count,
                max_tokens=int(params.get("max_tokens") or 16),
                temperature=float(params.get("temperature", 1.0)),
                top_p=float(params.get("top_p", 1.0)),
                top_k=int(params.get("top_k", -1)),
                stop=[stop] if isinstance(stop, str) else stop,
                seed=params.get("seed"),
            )
            prompt_lps = (
                sampler.host.prompt_logprobs(sampler.adapter, tokens)
                if want_prompt_logprobs
                else None
            )
            return Outcome(proto=encode_samples(sequences, prompt_lps))

        request_id = self.submit("Sample", work)
        return request_id, [f"{request_id}:{i}" for i in range(count)]

    def _sampler_for(self, sampler_id: str | None, request: dict[str, Any]) -> Sampler:
        if sampler_id:
            sampler = self.samplers.get(sampler_id)
            if sampler is None:
                raise UserInputError(f"unknown sampling session '{sampler_id}'")
            return sampler
        key = request.get("model_path") or request.get("base_model")
        if not key:
            raise UserInputError("sample needs a sampling_session_id, a model_path or a base_model")
        if key not in self.samplers:
            self._open_sampler(
                key,
                "adhoc",
                {"model_path": request.get("model_path"), "base_model": request.get("base_model")},
            )
        return self.samplers[key]

    # Listing ------------------------------------------------------------------------

    def training_run(self, run_id: str) -> dict[str, Any]:
        model = self.models.get(run_id)
        checkpoints = self.store.listing(run_id)
        if model is None and not checkpoints:
            raise UserInputError(f"unknown training run '{run_id}'")
        if model is not None:
            base, rank, last = model.base_model, model.spec.rank, model.last_request_time
        else:
            meta = self.store.read_meta(CheckpointRef.parse(checkpoints[0]["tinker_path"]))
            base, rank, last = meta["base_model"], meta["lora"]["rank"], checkpoints[0]["time"]
        training = [c for c in checkpoints if c["checkpoint_type"] == "training"]
        sampler = [c for c in checkpoints if c["checkpoint_type"] == "sampler"]
        return {
            "training_run_id": run_id,
            "base_model": base,
            "model_owner": "local",
            "is_lora": True,
            "lora_rank": rank,
            "corrupted": False,
            "last_request_time": last,
            "last_checkpoint": training[0] if training else None,
            "last_sampler_checkpoint": sampler[0] if sampler else None,
        }

    def training_runs(self) -> list[dict[str, Any]]:
        runs = set(self.models)
        runs |= {c["tinker_path"].split("/")[2] for c in self.store.listing()}
        return [self.training_run(run) for run in sorted(runs)]

    def weights_info(self, path: str) -> dict[str, Any]:
        meta = self.store.read_meta(CheckpointRef.parse(path))
        lora = meta["lora"]
        return {
            "base_model": meta["base_model"],
            "is_lora": True,
            "lora_rank": lora["rank"],
            "train_mlp": lora["train_mlp"],
            "train_attn": lora["train_attn"],
            "train_unembed": lora["train_unembed"],
        }


def slot(prefix: str, key: str) -> str:
    """A safe internal adapter name for an external id (ids hold ':' and '/')."""
    return prefix + hashlib.sha1(key.encode()).hexdigest()[:16]


def prompt_tokens(prompt: dict[str, Any]) -> list[int]:
    tokens: list[int] = []
    for chunk in prompt.get("chunks", []):
        if chunk.get("type", "encoded_text") != "encoded_text":
            raise UserInputError(f"prompt chunks of type '{chunk.get('type')}' are not supported")
        tokens.extend(int(t) for t in chunk["tokens"])
    if not tokens:
        raise UserInputError("the prompt has no tokens")
    return tokens


def guarded(work: Callable[[], object]) -> Callable[[], Outcome]:
    """Turn exceptions into error outcomes: user faults as ``user``, the rest as ``server``."""

    def run() -> Outcome:
        try:
            outcome = work()
        except UserInputError as exc:
            return Outcome(error=str(exc), category="user")
        except Exception as exc:
            log.exception("request failed")
            return Outcome(error=f"internal error: {type(exc).__name__}: {exc}", category="server")
        assert isinstance(outcome, Outcome)
        return outcome

    return run
