"""Tinker's training calls: create a LoRA training client, describe it, forward/backward,
optimizer step. Each returns a future id (``get_info`` answers at once)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.base.testhooks import pause_point
from rl_verifier_server.runtime import AdamParams, LoraSpec
from rl_verifier_server.scheduling.futures import Outcome
from rl_verifier_server.state.service import Service
from rl_verifier_server.state.sessions import now_iso
from rl_verifier_server.state.training_clients import slot
from rl_verifier_server.tinker.wire import (
    decode_forward_backward,
    encode_forward_backward,
    parse_forward_backward,
)

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost

MAX_LORA_RANK = 1024
OPTIONAL_ADAM = [f.name for f in dataclasses.fields(AdamParams) if f.name != "learning_rate"]


def create_model(service: Service, request: dict[str, Any]) -> str:
    session = service.sessions.use(request.get("session_id"))
    model_id = service.clients.new_id(session, request)
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
    service.hosts.check(base)
    user_metadata = fields.metadata(request)

    def make() -> tuple[str, ModelHost, LoraSpec]:
        host = service.hosts.get(base)
        host.trainers.create(slot("m", model_id), spec)
        record_run(service, model_id, str(base), spec, user_metadata)
        return str(base), host, spec

    answer = {"model_id": model_id, "type": "create_model"}
    work = service.clients.creation(model_id, session, make, answer)
    return service.compute.submit("CreateModel", work)


def record_run(
    service: Service,
    model_id: str,
    base: str,
    spec: LoraSpec,
    user_metadata: dict[str, str] | None,
) -> None:
    """What ``get_training_run`` answers about this run, also after a restart."""
    record = {
        "base_model": base,
        "lora": spec.to_json(),
        "user_metadata": user_metadata,
        "created": now_iso(),
    }
    service.store.write_run(model_id, record)


def get_info(service: Service, request: dict[str, Any]) -> dict[str, Any]:
    client = service.clients.use(request.get("model_id"))
    directory = str(service.hosts.directory_of(client.host))
    return {
        "model_id": client.model_id,
        "model_data": {"model_name": directory, "tokenizer_id": directory, "arch": None},
        "is_lora": True,
        "lora_rank": client.spec.rank,
        "optimizer_config": {"type": "adamw"},
    }


async def forward_backward(service: Service, body: bytes) -> str:
    """Decoded, and every datum checked, on a worker thread before the call is queued: a
    bad or oversized datum never reaches the compute thread."""
    request = await asyncio.to_thread(parse_forward_backward, body)
    client = service.clients.use(request.model_id)
    with client.checking(int(request.seq_id)):  # a refused call gives up its seq_id
        max_values = service.limits.max_loss_input_values
        call = await asyncio.to_thread(decode_forward_backward, request, max_values)
        if not call.data:
            raise UserError("forward_backward needs at least one datum")
        await asyncio.to_thread(client.host.check_data, call.data, call.loss_fn, call.config)
    kind = "Forward" if call.forward_only else "ForwardBackward"
    from rl_verifier_server.runtime.losses import losses

    loss = losses().get(call.loss_fn)

    def work() -> Outcome:
        client.check_live()
        if loss is not None and loss.derived:
            for i, (datum, provenance) in enumerate(zip(call.data, call.provenance, strict=True)):
                datum.derived = service.stability.resolve(client.session_id, i, datum, provenance)
        result = client.host.forward_backward(
            client.adapter, call.data, call.loss_fn, call.config, backward=not call.forward_only
        )
        return Outcome(proto=encode_forward_backward(result))

    return service.clients.submit(client, call.seq_id, kind, work)


def optim_step(service: Service, request: dict[str, Any]) -> str:
    client = service.clients.use(request.get("model_id"))
    seq_id = fields.integer(request, "seq_id")
    with client.checking(seq_id):
        adam = fields.mapping(request, "adam_params")
        if not adam:
            raise UserError("only AdamParams are supported by optim_step")
        learning_rate = fields.number(adam, "learning_rate")
        given = {key: fields.number(adam, key, None) for key in OPTIONAL_ADAM}
        params = AdamParams(learning_rate, **{k: v for k, v in given.items() if v is not None})
        params.check()  # before it is queued behind the client's other work

    def work() -> Outcome:
        client.check_live()
        metrics = client.host.trainers.optim_step(client.adapter, params)
        pause_point("optim_step", client.model_id)
        return Outcome(json={"metrics": metrics, "type": "optim_step"})

    return service.clients.submit(client, seq_id, "OptimStep", work)
