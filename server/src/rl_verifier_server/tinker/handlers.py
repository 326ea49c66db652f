"""One handler per Tinker route: read the request, make the call, shape the answer.

Every handler takes the ``Service`` and the request; ``app.ROUTES`` maps paths to them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from rl_verifier_server import __version__
from rl_verifier_server.base.limits import MAX_DATUMS
from rl_verifier_server.checkpoints import listing
from rl_verifier_server.http.http_io import body_bytes, body_json, error, future, page
from rl_verifier_server.state.service import Service
from rl_verifier_server.tinker import (
    checkpoint_calls,
    checkpoint_lifecycle,
    sampling_calls,
    session_calls,
    training_calls,
)

PROTO = "application/x-protobuf"
STILL_PENDING = 408  # a long poll that ended before its request did

# Answer with no JWT exchange, the plain httpx transport, sequential uncompressed
# forward_backward chunks of at most MAX_DATUMS datums, and no server-side custom losses.
CLIENT_CONFIG = {
    "pjwt_auth_enabled": False,
    "use_pyqwest_transport": False,
    "parallel_fwdbwd_chunks": False,
    "proto_compress_fwdbwd": False,
    "sample_use_retrieve_futures": False,
    "custom_loss_server_side": False,
    "sample_join_sampling_session": False,
    "fwdbwd_max_chunk_len": MAX_DATUMS,
}


async def read(service: Service, request: Request) -> dict[str, Any]:
    return await body_json(request, service.limits.max_json_bytes)


# Service and sessions ----------------------------------------------------------------------


async def healthz(service: Service, request: Request) -> Response:
    # Open to requests without a key (auth.OPEN_PATHS), so it reads no body at all.
    return JSONResponse({"status": "ok", "version": __version__})


async def client_config(service: Service, request: Request) -> Response:
    await read(service, request)
    return JSONResponse(CLIENT_CONFIG)


async def dynamic_config(service: Service, request: Request) -> Response:
    await read(service, request)
    return JSONResponse({})


async def telemetry(service: Service, request: Request) -> Response:
    await read(service, request)
    return JSONResponse({"status": "accepted"})


async def capabilities(service: Service, request: Request) -> Response:
    names = service.hosts.allowed.names()
    models = [{"model_name": n, "trainable": True, "sampleable": True} for n in names]
    return JSONResponse({"supported_models": models})


async def create_session(service: Service, request: Request) -> Response:
    await read(service, request)
    return JSONResponse({"session_id": service.sessions.create(), "type": "create_session"})


async def heartbeat(service: Service, request: Request) -> Response:
    service.sessions.use((await read(service, request)).get("session_id"))
    return JSONResponse({"type": "session_heartbeat"})


async def finish_session(service: Service, request: Request) -> Response:
    reason = (await read(service, request)).get("reason")
    kind = reason.get("type") if isinstance(reason, dict) else None
    stated = kind if isinstance(kind, str) else "no reason given"
    session_calls.finish_session(service, request.path_params["session_id"], stated)
    return JSONResponse({})


async def get_session(service: Service, request: Request) -> Response:
    session = service.sessions.get(request.path_params["session_id"])
    samplers = service.samplers.of_session(session.session_id)
    return JSONResponse({"training_run_ids": session.models, "sampler_ids": samplers})


async def list_sessions(service: Service, request: Request) -> Response:
    return JSONResponse({"sessions": service.sessions.ids()})


# Training and checkpoints -----------------------------------------------------------------


async def create_model(service: Service, request: Request) -> Response:
    return future(training_calls.create_model(service, await read(service, request)))


async def get_info(service: Service, request: Request) -> Response:
    return JSONResponse(training_calls.get_info(service, await read(service, request)))


async def forward_backward(service: Service, request: Request) -> Response:
    body = await body_bytes(request, service.limits.max_body_bytes)
    return future(await training_calls.forward_backward(service, body))


async def optim_step(service: Service, request: Request) -> Response:
    return future(training_calls.optim_step(service, await read(service, request)))


async def save_weights(service: Service, request: Request) -> Response:
    return future(checkpoint_calls.save_weights(service, await read(service, request)))


async def save_weights_for_sampler(service: Service, request: Request) -> Response:
    body = await read(service, request)
    return future(checkpoint_calls.save_weights_for_sampler(service, body))


async def load_weights(service: Service, request: Request) -> Response:
    return future(checkpoint_calls.load_weights(service, await read(service, request)))


async def save_weights_external(service: Service, request: Request) -> Response:
    body = await read(service, request)
    return future(checkpoint_calls.save_weights_external(service, body))


async def delete_checkpoint(service: Service, request: Request) -> Response:
    await checkpoint_lifecycle.delete(service, checkpoint_lifecycle.ref_of(request))
    return JSONResponse({})


async def checkpoint_ttl(service: Service, request: Request) -> Response:
    ref = checkpoint_lifecycle.ref_of(request)
    checkpoint_lifecycle.set_ttl(service, ref, await read(service, request))
    return JSONResponse({})


async def external_weights_urls(service: Service, request: Request) -> Response:
    ref = checkpoint_lifecycle.ref_of(request)
    base_url = str(request.base_url).rstrip("/")
    return JSONResponse(checkpoint_lifecycle.download_urls(service, ref, base_url))


async def download(service: Service, request: Request) -> Response:
    path = checkpoint_lifecycle.download_path(service, request)
    return FileResponse(path, media_type="application/octet-stream")


# Sampling and futures ---------------------------------------------------------------------


async def create_sampling_session(service: Service, request: Request) -> Response:
    body = await read(service, request)
    sampler_id = await sampling_calls.create_sampling_session(service, body)
    return JSONResponse({"sampling_session_id": sampler_id})


async def get_sampler(service: Service, request: Request) -> Response:
    sampler_id = request.path_params["sampler_id"]
    return JSONResponse(sampling_calls.sampler_info(service, sampler_id))


async def asample(service: Service, request: Request) -> Response:
    request_id, sequence_ids = sampling_calls.asample(service, await read(service, request))
    return future(request_id, sample_sequence_ids=sequence_ids)


async def retrieve_future(service: Service, request: Request) -> Response:
    request_id = (await read(service, request)).get("request_id")
    if not isinstance(request_id, str) or not service.futures.known(request_id):
        return error(f"unknown or expired request '{request_id}'", status=410)
    outcome = await service.futures.wait(request_id)
    if outcome is None:  # still running: poll again (see ``futures``)
        body = {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        return JSONResponse(body, status_code=STILL_PENDING)
    if outcome.error is not None:
        return JSONResponse({"error": outcome.error, "category": outcome.category})
    if outcome.proto is not None:
        return Response(outcome.proto, media_type=PROTO)
    return JSONResponse(outcome.json)


# Listings (the REST client) ---------------------------------------------------------------


async def training_runs(service: Service, request: Request) -> Response:
    checkpoint_lifecycle.sweep_soon(service)
    runs = listing.training_runs(service.store, service.clients.live)
    offset, count = page(request, 20)
    cursor = {"offset": offset, "limit": count, "total_count": len(runs)}
    return JSONResponse({"training_runs": runs[offset : offset + count], "cursor": cursor})


async def training_run(service: Service, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    return JSONResponse(listing.training_run(service.store, service.clients.live, run_id))


async def run_checkpoints(service: Service, request: Request) -> Response:
    checkpoint_lifecycle.sweep_soon(service)
    items = service.store.listing(request.path_params["run_id"])
    return JSONResponse({"checkpoints": items, "cursor": None})


async def user_checkpoints(service: Service, request: Request) -> Response:
    checkpoint_lifecycle.sweep_soon(service)
    items = service.store.listing()
    offset, count = page(request, 100)
    cursor = {"offset": offset, "limit": count, "total_count": len(items)}
    return JSONResponse({"checkpoints": items[offset : offset + count], "cursor": cursor})


async def weights_info(service: Service, request: Request) -> Response:
    return JSONResponse(listing.weights_info(service.store, await read(service, request)))
