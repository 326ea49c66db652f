"""Bearer-token auth: with a token set, only ``/healthz`` answers without it.

Clients send ``Authorization: Bearer TOKEN``. A client that cannot set headers (OpenRLHF
posts to its ``--reward.remote_url`` as given) may put ``?token=TOKEN`` in the URL
instead. A request without the token is answered 401 before its body is read.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from rl_verifier.reward_server.settings import TOKEN_VARIABLE
from rl_verifier.serving.access import key_matches

OPEN_PATHS = frozenset({"/healthz"})


def presented_token(scope: Scope) -> bytes | None:
    """The token a request carries: its bearer token, else its ``token`` query parameter."""
    for key, value in scope["headers"]:
        if key.lower() == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            if scheme.lower() == b"bearer":
                return bytes(credentials.strip())
    for pair in scope.get("query_string", b"").split(b"&"):
        name, _, value = pair.partition(b"=")
        if name == b"token":
            # Percent-escapes are decoded, but '+' is kept: a token pasted into a URL as
            # it is (OpenRLHF's --reward.remote_url) must still match.
            return unquote_to_bytes(value)
    return None


class RequireToken:
    """ASGI middleware: 401 for HTTP requests without the server's token."""

    def __init__(self, app: ASGIApp, token: str | None, on_refusal: Callable[[str], None]) -> None:
        self.app = app
        self.tokens = (token.encode(),) if token else ()
        self.on_refusal = on_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.tokens or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        presented = presented_token(scope)
        if presented is not None and key_matches(presented, self.tokens):
            await self.app(scope, receive, send)
            return
        problem = "no token was sent" if presented is None else "the token is not valid"
        self.on_refusal(scope["path"])
        response = JSONResponse(
            {
                "error": f"{problem}: send 'Authorization: Bearer TOKEN' (or ?token=TOKEN) "
                f"with the server's --token ({TOKEN_VARIABLE})"
            },
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)
