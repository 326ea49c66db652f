"""One client per judge verifier: an OpenAI-compatible ``/chat/completions`` endpoint
behind a shared connection pool, a concurrency limit, one deadline per call that every
attempt and wait counts against, retries that honour ``Retry-After``, replies read within
byte caps, and the on-disk call cache. Every failure is a ``JudgeFailure`` with a status
(``error`` or ``timeout``) and a reason; none is ever a score."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import os
import random
import re
import ssl
import time
from typing import TYPE_CHECKING

from rl_verifier import Status
from rl_verifier_judge.calls_cache import CallCache
from rl_verifier_judge.capped_reads import TooLong, read_capped, read_head, stream_lines
from rl_verifier_judge.outbound import Outbound, outbound
from rl_verifier_judge.replies import (
    BODY_SHOWN,
    JudgeFailure,
    Reply,
    Usage,
    reply_from_body,
    reply_from_stream,
)
from rl_verifier_judge.settings import JudgeSettings

if TYPE_CHECKING:
    import httpx  # about 80 ms to import: on the first call

RETRIED = frozenset({429, 500, 502, 503, 504})
ERROR_BODY_READ = 64 << 10  # bytes read of a reply whose status is an error
DELAY_SECONDS = re.compile(r"\d+(?:\.\d+)?")  # Retry-After as seconds (RFC 9110, decimals too)


class JudgeClient:
    """Calls the configured endpoint; open on first use, closed by ``close``."""

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limit: asyncio.Semaphore | None = None
        self._flying: dict[str, asyncio.Future[Reply]] = {}
        self.cache = CallCache(settings.cache, settings.cache_entries)

    def _client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._http is None or self._limit is None or self._loop is not loop:
            # One pool per event loop: connections cannot move between loops.
            import httpx

            limits = httpx.Limits(max_connections=self.settings.judge_concurrency)
            self._http = httpx.AsyncClient(
                limits=limits, timeout=self.settings.deadline_s, verify=tls(self.settings.base_url)
            )
            self._limit = asyncio.Semaphore(self.settings.judge_concurrency)
            self._loop = loop
        return self._http, self._limit

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()
        self.cache.close()

    def _headers(self) -> dict[str, str]:
        name = self.settings.api_key_env
        key = os.environ.get(name, "") if name else ""
        headers = {"Accept-Encoding": "identity"}  # read as sent: no decoder multiplies it
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def chat(self, messages: list[dict[str, str]]) -> Reply:
        """The judge's reply to ``messages``, from the cache when it was asked before."""
        call = outbound(self.settings, messages)
        key = call.key
        found = self.cache.get(key)
        if found is not None:
            alternatives = found.get("alternatives")
            return Reply(
                found["text"],
                found.get("finish_reason"),
                Usage(cached_calls=1),
                [(str(t), float(lp)) for t, lp in alternatives] if alternatives else None,
            )
        flying = self._flying.get(key)
        if flying is not None and self.cache.store is not None:
            shared = await asyncio.shield(flying)  # the same call, already on its way
            return Reply(
                shared.text, shared.finish_reason, Usage(cached_calls=1), shared.alternatives
            )
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        if self.cache.store is not None:  # with the cache off every call is made
            self._flying.setdefault(key, future)
        try:
            started = time.perf_counter()
            reply = await self._call(call)
            reply.usage.calls = 1
            elapsed = time.perf_counter() - started
            self.cache.put(key, self.settings.model, reply.stored(), elapsed)
            future.set_result(reply)
            return reply
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters see it, nobody else must
            raise
        finally:
            if self._flying.get(key) is future:
                del self._flying[key]

    async def _call(self, call: Outbound) -> Reply:
        """``call`` made within ``deadline_s`` from when it gets a slot: every attempt
        (connect, send, read) and every wait between them count. The slot is held through
        the waits, so an endpoint that asks for time gets fewer calls meanwhile."""
        http, limit = self._client()
        s = self.settings
        attempts = 0
        async with limit:
            ends = asyncio.get_running_loop().time() + s.deadline_s
            try:
                async with asyncio.timeout_at(ends):
                    while True:
                        attempts += 1
                        try:
                            reply = await self._once(http, call)
                        except _Retry as retry:
                            await asyncio.sleep(self._wait(retry, attempts, ends))
                            continue
                        reply.usage.attempts = attempts
                        return reply
            except TimeoutError:
                raise JudgeFailure(
                    Status.TIMEOUT, f"no judge reply within deadline_s={s.deadline_s:g}s"
                ) from None

    def _wait(self, retry: _Retry, attempts: int, ends: float) -> float:
        """Seconds to wait before the next attempt; a ``JudgeFailure`` when there is none
        (retries spent, a Retry-After past ``max_retry_after_s`` or past the deadline)."""
        s = self.settings
        if attempts > s.retries:
            raise JudgeFailure(
                Status.ERROR, f"{retry.reason} (after {attempts} attempts)", retry.text
            )
        wait = retry.after if retry.after is not None else _backoff(s, attempts)
        if retry.after is not None and wait > s.max_retry_after_s:
            raise JudgeFailure(
                Status.ERROR,
                f"{retry.reason}; Retry-After {wait:g}s exceeds max_retry_after_s",
                retry.text,
            )
        left = ends - asyncio.get_running_loop().time()
        if wait >= left:
            raise JudgeFailure(
                Status.TIMEOUT,
                f"{retry.reason}; the {wait:g}s wait before attempt {attempts + 1} would pass "
                f"deadline_s={s.deadline_s:g}s ({max(left, 0.0):.3g}s left)",
                retry.text,
            )
        return wait

    async def _once(self, http: httpx.AsyncClient, call: Outbound) -> Reply:
        import httpx

        s = self.settings
        try:
            sent = http.stream("POST", call.url, json=call.body, headers=self._headers())
            async with sent as answer:
                if answer.status_code != 200:
                    _refuse_status(answer, await read_head(answer, ERROR_BODY_READ))
                _refuse_encoding(answer)
                if call.body.get("stream"):
                    return await reply_from_stream(
                        stream_lines(answer, s.max_event_bytes, s.max_reply_bytes)
                    )
                return reply_from_body(await read_capped(answer, s.max_reply_bytes))
        except TooLong as cut:
            setting = "max_event_bytes" if cut.part == "stream line" else "max_reply_bytes"
            raise JudgeFailure(
                Status.ERROR,
                f"judge reply {cut.part} longer than {setting}={cut.limit} bytes; not read further",
                cut.head.decode("utf-8", "replace"),
            ) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.ConnectError as exc:
            raise _Retry(f"judge endpoint unreachable: {type(exc).__name__}: {exc}") from None
        except httpx.TransportError as exc:  # a connection lost, or a reply that broke HTTP
            raise _Retry(f"judge connection failed: {type(exc).__name__}: {exc}") from None


def tls(base_url: str) -> ssl.SSLContext | bool:
    """The process's one verifying TLS context for ``https`` (loading CA certificates costs
    ~0.1 s, so it is done once); plain ``http`` has nothing to verify."""
    return _tls_context() if base_url.startswith("https:") else False


@functools.cache
def _tls_context() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()


class _Retry(Exception):
    def __init__(self, reason: str, after: float | None = None, text: str = "") -> None:
        super().__init__(reason)
        self.reason, self.after, self.text = reason, after, text


def _backoff(settings: JudgeSettings, attempt: int) -> float:
    return settings.backoff_s * 2.0 ** (attempt - 1) * (0.5 + random.random() / 2)


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date); ``None`` for
    anything else (``nan``, ``-5``, ``inf``, garbage): such a header is ignored."""
    value = (value or "").strip()
    if DELAY_SECONDS.fullmatch(value):
        return float(value)  # a digit string too long for a float is inf: a wait too long
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(float(when.timestamp()) - time.time(), 0.0)


def _refuse_status(answer: httpx.Response, head: bytes) -> None:
    text = head.decode("utf-8", "replace")[:BODY_SHOWN]
    reason = f"judge endpoint answered HTTP {answer.status_code}"
    if answer.status_code in RETRIED:
        after = retry_after(answer.headers.get("retry-after"))
        raise _Retry(reason, after if answer.status_code in (429, 503) else None, text)
    raise JudgeFailure(Status.ERROR, f"{reason}: {text}", text)


def _refuse_encoding(answer: httpx.Response) -> None:
    """Bytes are read raw and capped as sent: a compressed reply (asked for
    ``identity``) could decompress past any cap, so it is refused."""
    encoding = answer.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise JudgeFailure(
            Status.ERROR,
            f"judge endpoint sent a reply with Content-Encoding {encoding!r}; "
            "the judge asks for identity and reads no other",
        )


__all__ = ["JudgeClient", "retry_after", "tls"]
