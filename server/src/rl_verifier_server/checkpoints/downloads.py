"""Signed download URLs for exported weights (``get_external_weights_urls``).

Each URL names one file of an ``external_weights`` checkpoint and carries its expiry and an
HMAC of both, made with a key this server process draws at start: whoever holds the URL may
fetch that file until it expires, with no API key (the SDK's downloader sends none), and
nothing else. A restart invalidates earlier URLs; the SDK signs new ones when it needs them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from urllib.parse import quote

from rl_verifier_server.base.errors import StatusError

PREFIX = "/api/v1/downloads"
VALID_FOR = timedelta(hours=1)


class UrlSigner:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def sign(self, base_url: str, run: str, name: str, file: str, now: datetime) -> str:
        expires = int((now + VALID_FOR).timestamp())
        path = f"{PREFIX}/{quote(run)}/{quote(name)}/{quote(file)}"
        return f"{base_url}{path}?expires={expires}&signature={self._mac(run, name, file, expires)}"

    def check(
        self, run: str, name: str, file: str, expires: str, signature: str, now: datetime
    ) -> None:
        """A 403 unless the signature is this server's for that file and has not expired."""
        valid = expires.isdigit() and len(expires) < 16
        expected = self._mac(run, name, file, int(expires)) if valid else ""
        if not (valid and hmac.compare_digest(expected, signature)):
            raise StatusError("this download URL is not valid; ask for a new one", status=403)
        if int(expires) <= now.timestamp():
            raise StatusError("this download URL has expired; ask for a new one", status=403)

    def _mac(self, run: str, name: str, file: str, expires: int) -> str:
        message = f"{run}\n{name}\n{file}\n{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()
