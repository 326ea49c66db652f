"""HTTP routes of the Tinker API, as the official SDK calls them: a table of paths over
``handlers``, and the errors every route answers the same way; beside them the
OpenAI-compatible routes (``openai_routes``, errors in OpenAI's shape)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rl_verifier import UserError
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.http.access_log import LogFailures
from rl_verifier_server.http.auth import RequireApiKey
from rl_verifier_server.http.http_io import error
from rl_verifier_server.openai import routes as openai_routes
from rl_verifier_server.state.service import Service
from rl_verifier_server.tinker import handlers, session_calls

Handler = Callable[[Service, Request], Awaitable[Response]]

V1 = "/api/v1"
GET, POST, PUT, DELETE = ("GET",), ("POST",), ("PUT",), ("DELETE",)
CHECKPOINT = f"{V1}/training_runs/{{run_id}}/checkpoints/{{kind}}/{{name}}"
ROUTES: tuple[tuple[str, tuple[str, ...], Handler], ...] = (
    (f"{V1}/healthz", ("GET", "POST"), handlers.healthz),
    ("/healthz", GET, handlers.healthz),
    (f"{V1}/client/config", POST, handlers.client_config),
    (f"{V1}/client/dynamic_config", POST, handlers.dynamic_config),
    (f"{V1}/create_session", POST, handlers.create_session),
    (f"{V1}/session_heartbeat", POST, handlers.heartbeat),
    (f"{V1}/telemetry", POST, handlers.telemetry),
    (f"{V1}/sessions/{{session_id}}/finish", POST, handlers.finish_session),
    (f"{V1}/create_model", POST, handlers.create_model),
    (f"{V1}/get_info", POST, handlers.get_info),
    (f"{V1}/forward_backward", POST, handlers.forward_backward),
    (f"{V1}/optim_step", POST, handlers.optim_step),
    (f"{V1}/save_weights", POST, handlers.save_weights),
    (f"{V1}/save_weights_for_sampler", POST, handlers.save_weights_for_sampler),
    (f"{V1}/load_weights", POST, handlers.load_weights),
    (f"{V1}/save_weights_external", POST, handlers.save_weights_external),
    (CHECKPOINT, DELETE, handlers.delete_checkpoint),
    (f"{CHECKPOINT}/ttl", PUT, handlers.checkpoint_ttl),
    (f"{CHECKPOINT}/external_weights_urls", GET, handlers.external_weights_urls),
    (f"{V1}/downloads/{{run_id}}/{{name}}/{{file}}", GET, handlers.download),
    (f"{V1}/create_sampling_session", POST, handlers.create_sampling_session),
    (f"{V1}/samplers/{{sampler_id}}", GET, handlers.get_sampler),
    (f"{V1}/asample", POST, handlers.asample),
    (f"{V1}/retrieve_future", POST, handlers.retrieve_future),
    (f"{V1}/get_server_capabilities", GET, handlers.capabilities),
    (f"{V1}/training_runs", GET, handlers.training_runs),
    (f"{V1}/training_runs/{{run_id}}", GET, handlers.training_run),
    (f"{V1}/training_runs/{{run_id}}/checkpoints", GET, handlers.run_checkpoints),
    (f"{V1}/checkpoints", GET, handlers.user_checkpoints),
    (f"{V1}/weights_info", POST, handlers.weights_info),
    (f"{V1}/sessions/{{session_id}}", GET, handlers.get_session),
    (f"{V1}/sessions", GET, handlers.list_sessions),
)
OPENAI_ROUTES: tuple[tuple[str, tuple[str, ...], Handler], ...] = (
    ("/v1/chat/completions", POST, openai_routes.chat_completions),
    ("/v1/completions", POST, openai_routes.completions),
    ("/v1/models", GET, openai_routes.models),
)


def endpoint(service: Service, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` bound to ``service``; user errors become 4xx answers."""

    async def answer(request: Request) -> Response:
        try:
            return await handler(service, request)
        except StatusError as exc:
            return error(str(exc), status=exc.status)
        except UserError as exc:
            return error(str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            return error(f"malformed request: {type(exc).__name__}: {exc}")

    return answer


def build_app(
    service: Service,
    on_start: Callable[[], Awaitable[None]] | None = None,
    api_keys: Iterable[str] = (),
) -> Starlette:
    """The application serving ``service``; ``on_start`` runs once listening. With
    ``api_keys``, requests without one of them are refused (401) before any work."""
    routes = [
        Route(path, endpoint(service, handler), methods=list(methods))
        for path, methods, handler in ROUTES
    ] + [
        Route(path, openai_routes.endpoint(service, handler), methods=list(methods))
        for path, methods, handler in OPENAI_ROUTES
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        housekeeping = asyncio.get_running_loop().create_task(session_calls.housekeeping(service))
        if on_start is not None:
            await on_start()
        yield
        housekeeping.cancel()

    middleware = [Middleware(LogFailures), Middleware(RequireApiKey, keys=tuple(api_keys))]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.add_exception_handler(404, unknown_route)
    app.add_exception_handler(405, wrong_method)
    return app


async def unknown_route(request: Request, exc: Exception) -> Response:
    return error(f"no such endpoint: {request.method} {request.url.path}", status=404)


async def wrong_method(request: Request, exc: Exception) -> Response:
    return error(f"{request.method} is not allowed on {request.url.path}", status=405)
