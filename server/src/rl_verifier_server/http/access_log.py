"""Failed requests in the server's log: every answer of 400 or more is logged at warning
level with its method, path, status and error, so a client's mistake is visible on the
server too (the access log itself stays off). Not a failure: a long poll of
``retrieve_future`` that ended before its request (408, polled again). Failed futures are
logged where they resolve (``futures``)."""

from __future__ import annotations

import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("rl_verifier_server")
MAX_ERROR_CHARS = 500
LONG_POLL = ("/api/v1/retrieve_future", 408)


class LogFailures:
    """ASGI middleware: log each HTTP answer with status >= 400."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0
        body = bytearray()

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if (scope.get("path"), status) == LONG_POLL:
                    status = 0  # not a failure: the client polls again
            elif message["type"] == "http.response.body" and status >= 400:
                if len(body) < MAX_ERROR_CHARS:
                    body.extend(message.get("body", b"")[:MAX_ERROR_CHARS])
                if not message.get("more_body", False):
                    log.warning(
                        "%s %s -> %d: %s",
                        scope.get("method", "?"),
                        scope.get("path", "?"),
                        status,
                        error_text(bytes(body)),
                    )
            await send(message)

        await self.app(scope, receive, watch)


def error_text(body: bytes) -> str:
    """The ``error`` of a JSON error body, else the body as text (shortened)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):  # OpenAI's shape (the /v1 routes)
        error = error.get("message")
    if isinstance(error, str):
        return error[:MAX_ERROR_CHARS]
    return body.decode("utf-8", "replace")[:MAX_ERROR_CHARS] or "(no body)"
