"""OpenAI-compatible routes: ``/v1/chat/completions``, ``/v1/completions`` (whole answers
or ``stream`` as server-sent events) and ``/v1/models``, for any base model the server
offers or a saved checkpoint (``model="tinker://..."``). Same keys, limits and compute
thread as the Tinker routes; errors in OpenAI's shape, 4xx naming the field."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from rl_verifier import UserError
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.http.http_io import body_json
from rl_verifier_server.openai.calls import (
    Generated,
    Prompt,
    Shaper,
    encoded_prompts,
    generation,
)
from rl_verifier_server.openai.request import GenerateCall
from rl_verifier_server.openai.text import TokenInfo
from rl_verifier_server.state.service import Service
from rl_verifier_server.tinker.sampling_calls import Source, model_source

Handler = Callable[[Service, Request], Awaitable[Response]]


def openai_error(message: str, status: int = 400, param: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status)


def endpoint(service: Service, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` bound to ``service``; user errors become OpenAI-shaped 4xx answers."""

    async def answer(request: Request) -> Response:
        try:
            return await handler(service, request)
        except StatusError as exc:
            return openai_error(str(exc), exc.status)
        except UserError as exc:
            return openai_error(str(exc))

    return answer


async def chat_completions(service: Service, request: Request) -> Response:
    return await complete(service, request, "chat")


async def completions(service: Service, request: Request) -> Response:
    return await complete(service, request, "completion")


async def models(service: Service, request: Request) -> Response:
    names = service.hosts.allowed.names()
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "rlv-serve"} for n in names]
    return JSONResponse({"object": "list", "data": data})


async def complete(service: Service, request: Request, kind: str) -> Response:
    body = await body_json(request, service.limits.max_json_bytes)
    call = GenerateCall.parse(kind, body, service.limits)
    try:
        source = model_source(service, call.model)
    except UserError as exc:
        return openai_error(f"'model': {exc}", getattr(exc, "status", 400), "model")
    prompts = await encoded_prompts(service, call, source)
    if call.stream:
        return await stream(service, call, source, prompts)
    done = await service.batches.submit(generation(service, call, source, prompts))
    return JSONResponse(Shaper(call).answer(done))


async def stream(
    service: Service, call: GenerateCall, source: Source, prompts: list[Prompt]
) -> Response:
    """Server-sent events as the tokens come; an error before the first token is still a
    plain 4xx answer. A client that goes away cancels the generation."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[bytes | None] = asyncio.Queue()
    shaper = Shaper(call)
    offsets: dict[int, int] = {}  # per choice: characters sent (compute thread only)

    def on_piece(
        tokenizer: Any, index: int, text: str, tokens: list[TokenInfo], end: str | None
    ) -> None:
        first = index not in offsets
        chunk = shaper.chunk(tokenizer, index, text, tokens, end, offsets.get(index, 0), first)
        offsets[index] = offsets.get(index, 0) + len(text)
        loop.call_soon_threadsafe(events.put_nowait, data(chunk))

    work: asyncio.Future[Generated] = service.batches.submit(
        generation(service, call, source, prompts, on_piece)
    )
    work.add_done_callback(lambda _: events.put_nowait(None))
    try:
        first = await events.get()
    except asyncio.CancelledError:
        work.cancel()
        raise
    if first is None:
        work.result()  # raises the user error (answered as a 4xx) or a server bug
    return StreamingResponse(sse(call, shaper, first, events, work), media_type="text/event-stream")


async def sse(
    call: GenerateCall,
    shaper: Shaper,
    first: bytes | None,
    events: asyncio.Queue[bytes | None],
    work: asyncio.Future[Generated],
) -> AsyncIterator[bytes]:
    event = first
    try:
        while event is not None:
            yield event
            event = await events.get()
    finally:
        if not work.done():  # the client went away: stop generating for it
            work.cancel()
    try:
        done = work.result()
    except UserError as exc:
        yield data({"error": {"message": str(exc), "type": "invalid_request_error"}})
        return
    if call.include_usage:
        yield data(shaper.usage_chunk(done))
    yield b"data: [DONE]\n\n"


def data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()
