"""The reward server's Starlette app: one scoring endpoint per registered protocol, health
and metrics.

Each scoring request goes: token (middleware) -> admission (429 when full) -> body within
its limit (413) -> parse (400) -> score by the deadline, cancelled if the client leaves
-> answer. Errors are JSON ``{"error": ...}`` without a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from rl_verifier.base.contracts import VerifierRef
from rl_verifier.base.errors import UserError
from rl_verifier.base.version import __version__
from rl_verifier.discovery.extensions import RewardProtocol
from rl_verifier.discovery.plugins import get_plugins
from rl_verifier.reward_server.admission import Admission, Overloaded, TooLarge
from rl_verifier.reward_server.auth import RequireToken
from rl_verifier.reward_server.metrics import Metrics
from rl_verifier.reward_server.protocols import OPENRLHF_PATH, TYPED_PATH
from rl_verifier.reward_server.scoring import score_request, unless_disconnected
from rl_verifier.reward_server.settings import ServerOptions
from rl_verifier.reward_server.wire import Batch, read_body
from rl_verifier.scoring.scorer import Scorer

log = logging.getLogger("rl_verifier.reward_server")

OFF_LOOP_BYTES = 256 * 1024  # parse or encode bigger bodies on a thread
CLIENT_CLOSED = 499  # nginx's code for a request whose client went away
SERVICE_PATHS = ("/healthz", "/v1/info", "/metrics")


def protocols() -> list[RewardProtocol]:
    """The registered wire protocols (the built-in typed and OpenRLHF ones, and plugins')."""
    return get_plugins().reward_protocols.values()


def known(path: str) -> str:
    """A metrics label for a path: any other path is 'other', so labels stay few."""
    paths = {*SERVICE_PATHS, TYPED_PATH, OPENRLHF_PATH, *(p.path for p in protocols())}
    return path if path in paths else "other"




def _error(message: str, status: int, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


async def _maybe_off_loop(size: int, call: Callable[[], object]) -> object:
    if size < OFF_LOOP_BYTES:
        return call()
    return await asyncio.to_thread(call)


class RewardService:
    """One scorer behind the endpoints, with the server's budgets and counters."""

    def __init__(self, scorer: Scorer, options: ServerOptions) -> None:
        reward = scorer.reward
        if reward is None:
            raise UserError("the reward server needs a reward spec (--reward)")
        self.scorer = scorer
        self.ref: VerifierRef = reward.ref
        self.options = options
        self.limits = options.limits
        self.admission = Admission(options.limits)
        self.metrics = Metrics()

    async def score(self, request: Request, endpoint: RewardProtocol) -> Response:
        started = time.perf_counter()
        try:
            response = await self._score(request, endpoint)
        except Exception:  # a bug of ours: answered, logged and counted, never a bare 500
            log.exception("%s: the request failed", endpoint.path)
            response = _error("the server failed on this request; see its log", 500)
        seconds = time.perf_counter() - started
        self.metrics.request(endpoint.path, response.status_code, seconds)
        return response

    async def _score(self, request: Request, endpoint: RewardProtocol) -> Response:
        try:
            with self.admission.request() as ticket:
                raw = await read_body(request, self.limits.max_body_bytes, ticket)
                batch = await _maybe_off_loop(len(raw), lambda: endpoint.parse(raw))
                assert isinstance(batch, Batch)
                ticket.admit(len(batch.samples))
                deadline = min(batch.deadline_s or self.limits.deadline_s, self.limits.deadline_s)
                work = score_request(self.scorer, self.ref, batch.samples, deadline, batch.problems)
                answered, scores = await unless_disconnected(work, request.receive)
                if not answered or scores is None:
                    return self._client_gone(endpoint, "its batch was cancelled")
                self.admission.finished(len(scores))
                self.metrics.scores(scores)
                options = self.options
                body = await _maybe_off_loop(len(raw), lambda: endpoint.answer(scores, options))
                assert isinstance(body, bytes)
                return Response(body, media_type="application/json")
        except Overloaded as exc:
            return _error(f"{exc}; retry later", 429, **{"Retry-After": str(exc.retry_after_s)})
        except TooLarge as exc:
            return _error(str(exc), 413)
        except UserError as exc:
            return _error(str(exc), 400)
        except ClientDisconnect:
            return self._client_gone(endpoint, "before its body was read")

    def _client_gone(self, endpoint: RewardProtocol, what: str) -> Response:
        self.metrics.disconnects += 1
        log.info("%s: the client went away; %s", endpoint.path, what)
        return Response(status_code=CLIENT_CLOSED)  # nobody reads it; the metrics do

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "version": __version__})

    async def info(self, request: Request) -> Response:
        limits = self.limits
        return JSONResponse(
            {
                "reward": self.options.spec,
                "verifier": self.ref.model_dump(),
                "executor": self.options.executor,
                "failed_reward": self.options.failed_reward,
                "limits": {
                    "max_body_bytes": limits.max_body_bytes,
                    "max_pending_samples": limits.max_pending_samples,
                    "max_pending_bytes": limits.max_pending_bytes,
                    "deadline_s": limits.deadline_s,
                },
            }
        )

    async def metrics_page(self, request: Request) -> Response:
        admission = self.admission
        text = self.metrics.render(
            admission.pending_samples, admission.held_bytes, admission.open_requests
        )
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def build_app(
    scorer: Scorer, options: ServerOptions, on_ready: Callable[[], Awaitable[None]] | None = None
) -> Starlette:
    """The app; the scorer is closed (its workers stopped) when the server shuts down,
    after in-flight requests are answered."""
    service = RewardService(scorer, options)
    def scoring(endpoint: RewardProtocol) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            return await service.score(request, endpoint)

        return handler

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if on_ready is not None:
            await on_ready()
        try:
            yield
        finally:
            await asyncio.to_thread(scorer.close)

    app = Starlette(
        routes=[
            *(Route(p.path, scoring(p), methods=["POST"]) for p in protocols()),
            Route("/healthz", service.healthz),
            Route("/v1/info", service.info),
            Route("/metrics", service.metrics_page),
        ],
        middleware=[
            Middleware(
                RequireToken,
                token=options.token,
                on_refusal=lambda path: service.metrics.request(known(path), 401),
            )
        ],
        lifespan=lifespan,
    )
    app.state.service = service
    return app
