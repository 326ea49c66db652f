"""Tinker's sampling calls: open a sampling session, describe a sampler, sample.

A sampler is a snapshot saved by a training client, a checkpoint, or a bare base model;
``asample`` may also name a checkpoint or base model directly (an ad hoc sampler).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.checkpoints.store import CheckpointRef
from rl_verifier_server.scheduling.compute import failure
from rl_verifier_server.scheduling.futures import Outcome
from rl_verifier_server.scheduling.sample_batches import Part, SampleJob
from rl_verifier_server.state.sampler_table import ClientSampler
from rl_verifier_server.state.service import Service
from rl_verifier_server.state.training_clients import slot
from rl_verifier_server.tinker.sample_request import SampleCall
from rl_verifier_server.tinker.wire import encode_samples

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost
    from rl_verifier_server.runtime.types import SampledSequence

Source = tuple[CheckpointRef | None, str | None]  # a checkpoint, or a base model name


async def create_sampling_session(service: Service, request: dict[str, Any]) -> str:
    session = service.sessions.use(request.get("session_id"))
    seq = fields.integer(request, "sampling_session_seq_id", minimum=0)
    sampler_id = f"{session.session_id}:sample:{seq}"
    source = _source(service, request)
    await service.compute.run(lambda: _open(service, sampler_id, session.session_id, source))
    return sampler_id


def sampler_info(service: Service, sampler_id: str) -> dict[str, Any]:
    sampler = service.samplers.get(sampler_id)
    return {
        "sampler_id": sampler_id,
        "base_model": str(service.hosts.directory_of(sampler.host)),
        "model_path": sampler.model_path,
    }


def asample(service: Service, request: dict[str, Any]) -> tuple[str, list[str]]:
    """The future id, and the ids of the sequences it will hold. The sample is batched
    with others queued beside it (``sample_batches``), once its parameters and prompt are
    checked."""
    call = SampleCall.parse(request, service.limits)
    sampler_id = fields.text(request, "sampling_session_id", None)
    if sampler_id is not None:
        host: ModelHost | None = service.samplers.get(sampler_id).host
        source: Source = (None, None)
    else:
        source = _source(service, request)
        host = service.hosts.find(base_name(service, source))
    if host is not None:  # else checked on the compute thread, once the model is loaded
        host.sampling.check_prompt(call.tokens, call.max_tokens)

    batch = uuid.uuid4().hex
    sequence_ids = [f"{batch}:{i}" for i in range(call.num_samples)]

    def prepare() -> list[Part]:
        sampler = sampler_for(service, sampler_id, source)
        request = sampler.host.sampling.prepare(
            call.tokens,
            num_samples=call.num_samples,
            max_tokens=call.max_tokens,
            temperature=call.params.temperature,
            top_p=call.params.top_p,
            top_k=call.params.top_k,
            stop=call.stop,
            seed=call.seed,
        )
        chosen.append(sampler)
        return [Part(sampler.host.sampling, sampler.adapter, request)]

    def finish(results: list[list[SampledSequence]]) -> Outcome:
        [sequences], [sampler] = results, chosen
        prompt_lps = (
            sampler.host.sampling.prompt_logprobs(sampler.adapter, call.tokens)
            if call.prompt_logprobs
            else None
        )
        if call.record_stability_info:
            service.stability.record(sampler.session_id, sequence_ids, call.tokens, sequences)
        return Outcome(proto=encode_samples(sequences, prompt_lps))

    chosen: list[ClientSampler] = []
    request_id = service.futures.create("Sample")
    answer = service.batches.submit(SampleJob(prepare, finish, rows=call.num_samples))

    async def settle() -> None:
        try:
            outcome = await answer
        except Exception as exc:  # noqa: BLE001 - answered as an error outcome
            outcome = failure(exc)
        service.futures.resolve(request_id, outcome)

    service.compute.track(asyncio.get_running_loop().create_task(settle()))
    return request_id, sequence_ids


def _source(service: Service, request: dict[str, Any]) -> Source:
    path = fields.text(request, "model_path", None)
    base_model = fields.text(request, "base_model", None)
    ref = CheckpointRef.parse(path) if path else None
    if ref is not None:
        service.store.read_meta(ref)
    if base_model is not None:
        service.hosts.check(base_model)
    if ref is None and not base_model:
        raise UserError("sampling needs a sampling_session_id, a model_path or a base_model")
    return ref, base_model


def _open(service: Service, sampler_id: str, session_id: str, source: Source) -> None:
    """Hold a sampler for ``source`` (compute thread: it may load a model or weights)."""
    ref, _ = source
    host = service.hosts.get(base_name(service, source))
    if ref is not None:
        host.snapshots.load(slot("p", sampler_id), service.store.directory(ref))
        sampler = ClientSampler(sampler_id, session_id, host, slot("p", sampler_id), ref.uri)
    else:
        sampler = ClientSampler(sampler_id, session_id, host, None, None)
    service.samplers.add(sampler)


def base_name(service: Service, source: Source) -> str:
    """The base model a sampler for ``source`` runs on: named, or the checkpoint's."""
    ref, base_model = source
    if base_model:
        return base_model
    assert ref is not None
    return str(service.store.read_meta(ref)["base_model"])


async def base_host(service: Service, source: Source) -> ModelHost:
    """The model host a sampler for ``source`` runs on, loaded on the compute thread if it
    is not loaded yet."""
    name = base_name(service, source)
    host = service.hosts.find(name)
    if host is None:
        host = await service.compute.run(lambda: service.hosts.get(name))
    return host


def model_source(service: Service, model: str) -> Source:
    """An OpenAI request's ``model``: a ``tinker://`` checkpoint path or a base model name."""
    if model.startswith("tinker://"):
        ref = CheckpointRef.parse(model)
        service.store.read_meta(ref)
        return ref, None
    service.hosts.check(model)
    return None, model


def sampler_for(service: Service, sampler_id: str | None, source: Source) -> ClientSampler:
    """The sampler a request names, most recently used from now on."""
    if sampler_id is None:  # ad hoc, by checkpoint or base model
        ref, base_model = source
        sampler_id = ref.uri if ref is not None else f"base:{base_model}"
        if sampler_id not in service.samplers:
            _open(service, sampler_id, "adhoc", source)
    return service.samplers.use(sampler_id)
