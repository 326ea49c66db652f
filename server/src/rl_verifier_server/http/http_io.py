"""Request bodies and query parameters read within the server's limits, and the JSON
answers every route shares."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from rl_verifier import UserError
from rl_verifier.cli_support import check_input, printable
from rl_verifier_server.base.limits import too_large

OFF_LOOP_BYTES = 256 * 1024  # bodies this big are decompressed and parsed on a thread
ZSTD_STEP = 1024 * 1024  # decompressed this much at a time, so a bomb stops at the limit


def error(message: str, status: int = 400) -> JSONResponse:
    """A user error: a 4xx with a JSON body, which the SDK raises without retrying."""
    return JSONResponse({"error": printable(message), "category": "user"}, status_code=status)


def future(request_id: str, **extra: Any) -> JSONResponse:
    """A request accepted as a future, to be long-polled with ``retrieve_future``."""
    return JSONResponse({"request_id": request_id, **extra})


async def body_json(request: Request, limit: int) -> dict[str, Any]:
    """The body as a JSON object (empty: ``{}``), refused past ``limit`` bytes."""
    raw = await body_bytes(request, limit)
    if len(raw) < OFF_LOOP_BYTES:
        return _json_object(raw)
    return await asyncio.to_thread(_json_object, raw)


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        raise UserError(f"malformed JSON body: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise UserError("the request body must be a JSON object")
    check_input(data)  # text that is not valid Unicode, or nesting past the limit: 400
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
        raw = await asyncio.to_thread(unzstd, raw, limit)
    return raw


def unzstd(compressed: bytes, limit: int) -> bytes:
    """``compressed`` decompressed step by step, refused (413) once past ``limit`` bytes."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed))
    pieces: list[bytes] = []
    size = 0
    try:
        while piece := reader.read(ZSTD_STEP):
            size += len(piece)
            if size > limit:
                raise too_large(limit)
            pieces.append(piece)
    except zstandard.ZstdError as exc:
        raise UserError(f"malformed zstd body: {exc}") from None
    return b"".join(pieces)


def page(request: Request, default_limit: int) -> tuple[int, int]:
    """``offset`` and ``limit`` query parameters: non-negative integers."""
    values = []
    for key, default in (("offset", 0), ("limit", default_limit)):
        raw = request.query_params.get(key, str(default))
        if not raw.isdigit() or len(raw) > 9:
            raise UserError(f"'{key}' must be a non-negative integer, got '{raw:.20}'")
        values.append(int(raw))
    return values[0], values[1]
