"""API keys: whose requests ``rlv serve`` answers.

The tinker SDK sends its key (``TINKER_API_KEY``) in the ``X-API-Key`` header of every
request; OpenAI clients send theirs as ``Authorization: Bearer KEY``; either is accepted,
for every route. With keys configured, a request without one of them is answered 401 before the
server reads its body or does anything else; only ``healthz`` stays open (it tells nothing
but the version). Without keys the server answers everyone, which ``serve`` allows only on
a loopback address.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from rl_verifier import UserError
from rl_verifier.cli_support import key_matches

KEY_HEADER = b"x-api-key"
BEARER_HEADER = b"authorization"
KEYS_VARIABLE = "RLV_SERVE_API_KEYS"
OPEN_PATHS = frozenset({"/healthz", "/api/v1/healthz"})
SIGNED_PREFIX = "/api/v1/downloads/"  # signed URLs: the signature is the authorization
KEY_FORM = re.compile(r"tml-[\x21-\x2b\x2d-\x7e]+")  # printable ASCII, no space or comma


def collect_keys(options: Iterable[str], from_environment: str | None) -> tuple[str, ...]:
    """Keys from ``--api-key`` options and the comma-separated environment variable."""
    keys: list[str] = []
    for key in [*options, *(from_environment or "").split(",")]:
        key = key.strip()
        if not key or key in keys:
            continue
        if not KEY_FORM.fullmatch(key):
            raise UserError(
                "an API key must start with 'tml-' (the tinker SDK refuses other keys) "
                "and hold only printable ASCII characters, no spaces or commas"
            )
        keys.append(key)
    return tuple(keys)


class RequireApiKey:
    """ASGI middleware: 401 for HTTP requests without a valid ``X-API-Key``."""

    def __init__(self, app: ASGIApp, keys: Iterable[str]) -> None:
        self.app = app
        self.keys = tuple(key.encode() for key in keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or not self.keys
            or path in OPEN_PATHS
            or path.startswith(SIGNED_PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        presented = presented_key(scope["headers"])
        if presented is not None and key_matches(presented, self.keys):
            await self.app(scope, receive, send)
            return
        problem = "no API key was sent" if presented is None else "the API key is not valid"
        response = JSONResponse(
            {
                "error": f"{problem}: this server needs one of its keys (rlv serve --api-key) "
                "in the X-API-Key header (the tinker SDK sends TINKER_API_KEY) or as "
                "'Authorization: Bearer KEY' (OpenAI clients' api_key)",
                "category": "user",
            },
            status_code=401,
        )
        await response(scope, receive, send)


def presented_key(headers: Iterable[tuple[bytes, bytes]]) -> bytes | None:
    """The key a request carries: ``X-API-Key``, else an ``Authorization: Bearer`` token."""
    bearer = None
    for name, value in headers:
        name = name.lower()
        if name == KEY_HEADER:
            return value
        if name == BEARER_HEADER and value[:7].lower() == b"bearer ":
            bearer = value[7:].strip()
    return bearer
