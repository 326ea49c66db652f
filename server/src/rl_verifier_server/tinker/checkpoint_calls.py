"""Tinker's checkpoint calls: save a training client's state, a sampler snapshot or an
export of its weights under a ``tinker://`` path, and load one into an existing or a new
training client. Saves take the client's ``ttl_seconds`` and ``user_metadata``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.checkpoints.export import parse_recipients, write_export
from rl_verifier_server.checkpoints.store import CheckpointRef, check_ttl
from rl_verifier_server.runtime import LoraSpec
from rl_verifier_server.scheduling.futures import Outcome
from rl_verifier_server.state.sampler_table import ClientSampler
from rl_verifier_server.state.service import Service
from rl_verifier_server.state.training_clients import TrainingClient, slot
from rl_verifier_server.tinker.training_calls import record_run

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost


def save_weights(service: Service, request: dict[str, Any]) -> str:
    client = service.clients.use(request.get("model_id"))
    seq_id = fields.integer(request, "seq_id")
    with client.checking(seq_id):
        name = fields.text(request, "path", f"seq{seq_id}")
        ref = CheckpointRef.of(client.model_id, "weights", name)
        overwrite = fields.flag(request, "overwrite", False)
        ttl = check_ttl(request.get("ttl_seconds"))
        record = _record(client, request)
        service.store.directory(ref)

    def work() -> Outcome:
        client.check_live()
        with service.store.writing(ref, record, overwrite, ttl) as staging:
            client.host.trainers.save_state(client.adapter, staging, with_optimizer=True)
        return Outcome(json={"path": ref.uri, "type": "save_weights"})

    return service.clients.submit(client, seq_id, "SaveWeights", work)


def save_weights_for_sampler(service: Service, request: dict[str, Any]) -> str:
    client = service.clients.use(request.get("model_id"))
    seq_id = fields.integer(request, "seq_id")
    with client.checking(seq_id):
        name = fields.text(request, "path", None)
        sampler_seq = fields.integer(request, "sampling_session_seq_id", None, minimum=0)
        ttl = check_ttl(request.get("ttl_seconds"))
        record = _record(client, request)
        if name is not None:
            ref = CheckpointRef.of(client.model_id, "sampler_weights", name)
            service.store.directory(ref)
        elif sampler_seq is None:
            raise UserError("save_weights_for_sampler needs a path or a sampling_session_seq_id")
    host = client.host

    def save_named() -> Outcome:
        client.check_live()
        sampler_slot = slot("p", ref.uri)
        try:
            with service.store.writing(ref, record, True, ttl) as staging:
                host.snapshot_sampler(client.adapter, sampler_slot, staging)
        except BaseException:
            if host.snapshots.has(sampler_slot):
                host.snapshots.drop(sampler_slot)
            raise
        host.snapshots.relocate(sampler_slot, service.store.directory(ref))
        service.samplers.add(ClientSampler(ref.uri, client.session_id, host, sampler_slot, ref.uri))
        return Outcome(json={"path": ref.uri, "type": "save_weights_for_sampler"})

    def snapshot() -> Outcome:
        client.check_live()
        sampler_id = f"{client.session_id}:sample:{sampler_seq}"
        host.snapshot_sampler(client.adapter, slot("p", sampler_id), None)
        service.samplers.add(
            ClientSampler(sampler_id, client.session_id, host, slot("p", sampler_id), None)
        )
        return Outcome(json={"sampling_session_id": sampler_id, "path": None})

    work = save_named if name is not None else snapshot
    return service.clients.submit(client, seq_id, "SaveWeightsForSampler", work)


def save_weights_external(service: Service, request: dict[str, Any]) -> str:
    """The client's adapter as a standard peft adapter (``export``), to download."""
    client = service.clients.use(request.get("model_id"))
    seq_id = fields.integer(request, "seq_id")
    with client.checking(seq_id):
        ref = CheckpointRef.of(client.model_id, "external_weights", fields.text(request, "path"))
        ttl = check_ttl(request.get("ttl_seconds"))
        recipients = parse_recipients(request.get("age_encryption_recipients"))
        record = {**_record(client, request), "encrypted": bool(recipients)}
        service.store.directory(ref)

    def work() -> Outcome:
        client.check_live()
        adapter = Path(tempfile.mkdtemp(prefix="rlv-export-"))
        try:
            client.host.trainers.save_state(client.adapter, adapter, with_optimizer=False)
            with service.store.writing(ref, record, True, ttl) as staging:
                write_export(adapter, staging, client.base_model, recipients)
        finally:
            shutil.rmtree(adapter, ignore_errors=True)
        size = sum(p.stat().st_size for p in service.store.directory(ref).iterdir())
        return Outcome(json={"path": ref.uri, "size_bytes": size, "type": "save_weights_external"})

    return service.clients.submit(client, seq_id, "SaveWeightsExternal", work)


def load_weights(service: Service, request: dict[str, Any]) -> str:
    """Into the training client ``model_id``, or (without one) into a new client."""
    with_optimizer = fields.flag(request, "optimizer", False)
    if request.get("model_id") is None:
        return _load_into_new_client(service, request, with_optimizer)
    client = service.clients.use(request.get("model_id"))
    seq_id = fields.integer(request, "seq_id")
    with client.checking(seq_id):
        ref = _checkpoint_ref(service, request.get("path"), with_optimizer)

    def work() -> Outcome:
        client.check_live()
        service.store.read_meta(ref)
        directory = service.store.directory(ref)
        client.host.trainers.load_state(client.adapter, directory, with_optimizer)
        return Outcome(json={"path": ref.uri, "model_id": client.model_id})

    return service.clients.submit(client, seq_id, "LoadWeights", work)


def _load_into_new_client(service: Service, request: dict[str, Any], with_optimizer: bool) -> str:
    ref = _checkpoint_ref(service, request.get("path"), with_optimizer)
    session = service.sessions.use(request.get("session_id"))
    model_id = service.clients.new_id(session, request)
    base_request = fields.text(request, "base_model", None)
    if base_request is not None:
        service.hosts.check(base_request)
    user_metadata = fields.metadata(request)

    def make() -> tuple[str, ModelHost, LoraSpec]:
        base = base_request or service.store.read_meta(ref)["base_model"]
        host = service.hosts.get(base)
        directory = service.store.directory(ref)
        spec = host.trainers.create_from_state(slot("m", model_id), directory, with_optimizer)
        record_run(service, model_id, base, spec, user_metadata)
        return base, host, spec

    answer = {"path": ref.uri, "model_id": model_id}
    work = service.clients.creation(model_id, session, make, answer)
    return service.compute.submit("LoadWeights", work)


def _checkpoint_ref(service: Service, path: object, with_optimizer: bool) -> CheckpointRef:
    """The checkpoint a request names; with the optimizer, it must be a training one."""
    ref = CheckpointRef.parse(path)
    service.store.read_meta(ref)
    if with_optimizer and ref.kind != "weights":
        raise UserError(f"{ref.uri} holds sampler weights only, no optimizer state")
    return ref


def _record(client: TrainingClient, request: dict[str, Any]) -> dict[str, Any]:
    """What the checkpoint store records beside the adapter files."""
    return {
        "base_model": client.base_model,
        "lora": client.spec.to_json(),
        "run": client.model_id,
        "user_metadata": fields.metadata(request),
    }
