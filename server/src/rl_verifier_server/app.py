"""HTTP routes of the Tinker API, as the official SDK calls them."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rl_verifier.errors import UserError
from rl_verifier_server import __version__, listing
from rl_verifier_server.auth import RequireApiKey
from rl_verifier_server.errors import StatusError
from rl_verifier_server.limits import too_large
from rl_verifier_server.service import Service

log = logging.getLogger("rl_verifier_server")
PROTO = "application/x-protobuf"

# Answer with no JWT exchange, the plain httpx transport, sequential uncompressed
# forward_backward chunks, and no server-side custom losses.
CLIENT_CONFIG = {
    "pjwt_auth_enabled": False,
    "use_pyqwest_transport": False,
    "parallel_fwdbwd_chunks": False,
    "proto_compress_fwdbwd": False,
    "sample_use_retrieve_futures": False,
    "custom_loss_server_side": False,
    "sample_join_sampling_session": False,
}

Handler = Callable[[Request], Awaitable[Response]]


def error(message: str, status: int = 400) -> JSONResponse:
    """A user error: a 4xx with a JSON body, which the SDK raises without retrying."""
    return JSONResponse({"error": message, "category": "user"}, status_code=status)


def future(request_id: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"request_id": request_id, **extra})


async def body_json(request: Request, limit: int) -> dict[str, Any]:
    raw = await body_bytes(request, limit)
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        raise UserError(f"malformed JSON body: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise UserError("the request body must be a JSON object")
    return data


async def body_bytes(request: Request, limit: int) -> bytes:
    """The request body, refused (413) past ``limit`` bytes, before or after zstd."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    raw = b"".join(chunks)
    if request.headers.get("content-encoding", "").lower() == "zstd":
        import zstandard

        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw))
            raw = reader.read(limit + 1)
        except zstandard.ZstdError as exc:
            raise UserError(f"malformed zstd body: {exc}") from None
        if len(raw) > limit:
            raise too_large(limit)
    return raw


def build_app(
    service: Service,
    on_start: Callable[[], Awaitable[None]] | None = None,
    api_keys: Iterable[str] = (),
) -> Starlette:
    """The application serving ``service``; ``on_start`` runs once listening. With
    ``api_keys``, requests without one of them are refused (401) before any work."""
    limit = service.limits.max_body_bytes

    def endpoint(handler: Handler) -> Handler:
        async def wrapped(request: Request) -> Response:
            try:
                return await handler(request)
            except StatusError as exc:
                return error(str(exc), status=exc.status)
            except UserError as exc:
                return error(str(exc))
            except (KeyError, TypeError, ValueError) as exc:
                return error(f"malformed request: {type(exc).__name__}: {exc}")

        return wrapped

    async def read(request: Request) -> dict[str, Any]:
        return await body_json(request, limit)

    async def healthz(request: Request) -> Response:
        if request.method == "POST":
            await read(request)
        return JSONResponse({"status": "ok", "version": __version__})

    async def client_config(request: Request) -> Response:
        await read(request)
        return JSONResponse(CLIENT_CONFIG)

    async def dynamic_config(request: Request) -> Response:
        await read(request)
        return JSONResponse({})

    async def create_session(request: Request) -> Response:
        await read(request)
        return JSONResponse({"session_id": service.create_session(), "type": "create_session"})

    async def heartbeat(request: Request) -> Response:
        service.heartbeat(await read(request))
        return JSONResponse({"type": "session_heartbeat"})

    async def telemetry(request: Request) -> Response:
        await read(request)
        return JSONResponse({"status": "accepted"})

    async def finish(request: Request) -> Response:
        await read(request)
        service.finish_session(request.path_params["session_id"])
        return JSONResponse({})

    async def create_model(request: Request) -> Response:
        return future(service.create_model(await read(request)))

    async def get_info(request: Request) -> Response:
        return JSONResponse(service.get_info(await read(request)))

    async def forward_backward(request: Request) -> Response:
        return future(service.forward_backward(await body_bytes(request, limit)))

    async def optim_step(request: Request) -> Response:
        return future(service.optim_step(await read(request)))

    async def save_weights(request: Request) -> Response:
        return future(service.save_weights(await read(request)))

    async def save_weights_for_sampler(request: Request) -> Response:
        return future(service.save_weights_for_sampler(await read(request)))

    async def load_weights(request: Request) -> Response:
        return future(service.load_weights(await read(request)))

    async def create_sampling_session(request: Request) -> Response:
        sampler_id = await service.create_sampling_session(await read(request))
        return JSONResponse({"sampling_session_id": sampler_id})

    async def get_sampler(request: Request) -> Response:
        return JSONResponse(service.sampler_info(request.path_params["sampler_id"]))

    async def asample(request: Request) -> Response:
        request_id, sequence_ids = service.asample(await read(request))
        return future(request_id, sample_sequence_ids=sequence_ids)

    async def retrieve_future(request: Request) -> Response:
        request_id = (await read(request)).get("request_id")
        if not isinstance(request_id, str) or not service.futures.known(request_id):
            return error(f"unknown or expired request '{request_id}'", status=410)
        outcome = await service.futures.wait(request_id)
        if outcome is None:
            return JSONResponse(
                {"type": "try_again", "request_id": request_id, "queue_state": "active"}
            )
        if outcome.error is not None:
            return JSONResponse({"error": outcome.error, "category": outcome.category})
        if outcome.proto is not None:
            return Response(outcome.proto, media_type=PROTO)
        return JSONResponse(outcome.json)

    async def capabilities(request: Request) -> Response:
        names = service.hosts.allowed.names()
        return JSONResponse(
            {
                "supported_models": [
                    {"model_name": n, "trainable": True, "sampleable": True} for n in names
                ]
            }
        )

    async def training_runs(request: Request) -> Response:
        runs = listing.training_runs(service.store, service.models)
        offset, count = page(request, 20)
        cursor = {"offset": offset, "limit": count, "total_count": len(runs)}
        return JSONResponse({"training_runs": runs[offset : offset + count], "cursor": cursor})

    async def training_run(request: Request) -> Response:
        return JSONResponse(
            listing.training_run(service.store, service.models, request.path_params["run_id"])
        )

    async def run_checkpoints(request: Request) -> Response:
        items = service.store.listing(request.path_params["run_id"])
        return JSONResponse({"checkpoints": items, "cursor": None})

    async def user_checkpoints(request: Request) -> Response:
        items = service.store.listing()
        offset, count = page(request, 100)
        cursor = {"offset": offset, "limit": count, "total_count": len(items)}
        return JSONResponse({"checkpoints": items[offset : offset + count], "cursor": cursor})

    async def weights_info(request: Request) -> Response:
        return JSONResponse(listing.weights_info(service.store, await read(request)))

    async def get_session(request: Request) -> Response:
        session = service.session(request.path_params["session_id"])
        samplers = service.samplers.of_session(session.session_id)
        return JSONResponse({"training_run_ids": session.models, "sampler_ids": samplers})

    async def list_sessions(request: Request) -> Response:
        return JSONResponse({"sessions": service.sessions.ids()})

    v1 = "/api/v1"
    post = ["POST"]
    routes = [
        Route(f"{v1}/healthz", endpoint(healthz), methods=["GET", "POST"]),
        Route("/healthz", endpoint(healthz), methods=["GET"]),
        Route(f"{v1}/client/config", endpoint(client_config), methods=post),
        Route(f"{v1}/client/dynamic_config", endpoint(dynamic_config), methods=post),
        Route(f"{v1}/create_session", endpoint(create_session), methods=post),
        Route(f"{v1}/session_heartbeat", endpoint(heartbeat), methods=post),
        Route(f"{v1}/telemetry", endpoint(telemetry), methods=post),
        Route(f"{v1}/sessions/{{session_id}}/finish", endpoint(finish), methods=post),
        Route(f"{v1}/create_model", endpoint(create_model), methods=post),
        Route(f"{v1}/get_info", endpoint(get_info), methods=post),
        Route(f"{v1}/forward_backward", endpoint(forward_backward), methods=post),
        Route(f"{v1}/optim_step", endpoint(optim_step), methods=post),
        Route(f"{v1}/save_weights", endpoint(save_weights), methods=post),
        Route(f"{v1}/save_weights_for_sampler", endpoint(save_weights_for_sampler), methods=post),
        Route(f"{v1}/load_weights", endpoint(load_weights), methods=post),
        Route(f"{v1}/create_sampling_session", endpoint(create_sampling_session), methods=post),
        Route(f"{v1}/samplers/{{sampler_id}}", endpoint(get_sampler), methods=["GET"]),
        Route(f"{v1}/asample", endpoint(asample), methods=post),
        Route(f"{v1}/retrieve_future", endpoint(retrieve_future), methods=post),
        Route(f"{v1}/get_server_capabilities", endpoint(capabilities), methods=["GET"]),
        Route(f"{v1}/training_runs", endpoint(training_runs), methods=["GET"]),
        Route(f"{v1}/training_runs/{{run_id}}", endpoint(training_run), methods=["GET"]),
        Route(
            f"{v1}/training_runs/{{run_id}}/checkpoints", endpoint(run_checkpoints), methods=["GET"]
        ),
        Route(f"{v1}/checkpoints", endpoint(user_checkpoints), methods=["GET"]),
        Route(f"{v1}/weights_info", endpoint(weights_info), methods=post),
        Route(f"{v1}/sessions/{{session_id}}", endpoint(get_session), methods=["GET"]),
        Route(f"{v1}/sessions", endpoint(list_sessions), methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        housekeeping = asyncio.get_running_loop().create_task(service.housekeeping())
        if on_start is not None:
            await on_start()
        yield
        housekeeping.cancel()

    keys = tuple(api_keys)
    app = Starlette(
        routes=routes, lifespan=lifespan, middleware=[Middleware(RequireApiKey, keys=keys)]
    )

    async def unknown(request: Request, exc: Exception) -> Response:
        return error(f"no such endpoint: {request.method} {request.url.path}", status=404)

    async def wrong_method(request: Request, exc: Exception) -> Response:
        return error(f"{request.method} is not allowed on {request.url.path}", status=405)

    app.add_exception_handler(404, unknown)
    app.add_exception_handler(405, wrong_method)
    return app


def page(request: Request, default_limit: int) -> tuple[int, int]:
    """``offset`` and ``limit`` query parameters: non-negative integers."""
    values = []
    for key, default in (("offset", 0), ("limit", default_limit)):
        raw = request.query_params.get(key, str(default))
        if not raw.isdigit() or len(raw) > 9:
            raise UserError(f"'{key}' must be a non-negative integer, got '{raw:.20}'")
        values.append(int(raw))
    return values[0], values[1]
