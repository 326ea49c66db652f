"""One client per judge verifier: an OpenAI-compatible ``/chat/completions`` endpoint
behind a shared connection pool, a concurrency limit, a deadline per call, retries that
honour ``Retry-After`` and the on-disk call cache. Every failure is a ``JudgeFailure``
with a status (``error`` or ``timeout``) and a reason; none is ever a score."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import os
import random
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from rl_verifier import Status
from rl_verifier_judge.calls_cache import CallCache, call_key
from rl_verifier_judge.logprob_scores import Alternatives, first_alternatives
from rl_verifier_judge.settings import JudgeSettings

RETRIED = frozenset({429, 500, 502, 503, 504})
BODY_SHOWN = 500
SCORE_REPLY_TOKENS = 3  # format='logprobs': the score is read at the first token


class JudgeFailure(Exception):
    """A judge call that gave no usable reply."""

    def __init__(self, status: Status, reason: str, text: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.text = text


@dataclass
class Usage:
    """Calls and tokens spent, summed over the judge calls behind one verdict."""

    calls: int = 0
    cached_calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        for name in ("calls", "cached_calls", "attempts", "prompt_tokens", "completion_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_info(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Reply:
    """The judge's text, why it stopped, what the call cost and, where logprobs were asked,
    the first token's alternatives."""

    text: str
    finish_reason: str | None
    usage: Usage = field(default_factory=Usage)
    alternatives: Alternatives | None = None

    def stored(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "alternatives": self.alternatives,
        }


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

    def request_body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The request without transport settings: also what the cache key digests."""
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        if s.format == "logprobs":
            body["max_tokens"] = min(s.max_tokens, SCORE_REPLY_TOKENS)
            body["logprobs"] = True
            body["top_logprobs"] = s.top_logprobs
        return body

    def _headers(self) -> dict[str, str]:
        name = self.settings.api_key_env
        key = os.environ.get(name, "") if name else ""
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def chat(self, messages: list[dict[str, str]]) -> Reply:
        """The judge's reply to ``messages``, from the cache when it was asked before."""
        body = self.request_body(messages)
        key = call_key(body)
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
            reply = await self._call(body)
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

    async def _call(self, body: dict[str, Any]) -> Reply:
        http, limit = self._client()
        s = self.settings
        url = s.base_url.rstrip("/") + "/chat/completions"
        if s.stream:
            body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        attempts = 0
        while True:
            attempts += 1
            try:
                async with limit:
                    reply = await asyncio.wait_for(self._once(http, url, body), s.deadline_s)
                reply.usage.attempts = attempts
                return reply
            except TimeoutError:
                raise JudgeFailure(
                    Status.TIMEOUT, f"no judge reply within deadline_s={s.deadline_s:g}s"
                ) from None
            except _Retry as retry:
                if attempts > s.retries:
                    raise JudgeFailure(
                        Status.ERROR, f"{retry.reason} (after {attempts} attempts)", retry.text
                    ) from None
                wait = retry.after if retry.after is not None else _backoff(s, attempts)
                if wait > s.max_retry_after_s:
                    raise JudgeFailure(
                        Status.ERROR,
                        f"{retry.reason}; Retry-After {wait:g}s exceeds max_retry_after_s",
                        retry.text,
                    ) from None
                await asyncio.sleep(wait)

    async def _once(self, http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Reply:
        try:
            if body.get("stream"):
                async with http.stream("POST", url, json=body, headers=self._headers()) as answer:
                    if answer.status_code != 200:
                        await answer.aread()
                        _refuse_status(answer)
                    return await _read_stream(answer)
            answer = await http.post(url, json=body, headers=self._headers())
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as exc:
            raise _Retry(f"judge endpoint unreachable: {type(exc).__name__}: {exc}") from None
        if answer.status_code != 200:
            _refuse_status(answer)
        return _read_body(answer)


def tls(base_url: str) -> ssl.SSLContext | bool:
    """The process's one verifying TLS context for ``https`` (loading CA certificates costs
    ~0.1 s, so it is done once); plain ``http`` has nothing to verify."""
    return _tls_context() if base_url.startswith("https:") else False


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class _Retry(Exception):
    def __init__(self, reason: str, after: float | None = None, text: str = "") -> None:
        super().__init__(reason)
        self.reason, self.after, self.text = reason, after, text


def _backoff(settings: JudgeSettings, attempt: int) -> float:
    return settings.backoff_s * 2.0 ** (attempt - 1) * (0.5 + random.random() / 2)


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date)."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(float(when.timestamp()) - time.time(), 0.0)


def _refuse_status(answer: httpx.Response) -> None:
    text = answer.text[:BODY_SHOWN]
    reason = f"judge endpoint answered HTTP {answer.status_code}"
    if answer.status_code in RETRIED:
        after = retry_after(answer.headers.get("retry-after"))
        raise _Retry(reason, after if answer.status_code in (429, 503) else None, text)
    raise JudgeFailure(Status.ERROR, f"{reason}: {text}", text)


def _usage(data: Any) -> Usage:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _read_body(answer: httpx.Response) -> Reply:
    try:
        data = answer.json()
    except ValueError:
        raise JudgeFailure(
            Status.ERROR, "judge endpoint sent a body that is not JSON", answer.text[:BODY_SHOWN]
        ) from None
    try:
        [choice, *_] = data["choices"]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise JudgeFailure(
            Status.ERROR, "judge reply has no choices[0].message", answer.text[:BODY_SHOWN]
        ) from None
    _check_refusal(message.get("refusal"), choice.get("finish_reason"), content)
    if not isinstance(content, str):
        raise JudgeFailure(
            Status.ERROR, "judge reply has no text content", answer.text[:BODY_SHOWN]
        )
    alternatives = first_alternatives(choice.get("logprobs"))
    return Reply(content, choice.get("finish_reason"), _usage(data), alternatives)


def _check_refusal(refusal: Any, finish_reason: Any, content: Any) -> None:
    if refusal:
        raise JudgeFailure(Status.ERROR, "the judge refused", str(refusal))
    if finish_reason == "content_filter":
        raise JudgeFailure(Status.ERROR, "the judge's reply was filtered", str(content or ""))


async def _read_stream(answer: httpx.Response) -> Reply:
    """Text of an SSE stream; a stream that ends before ``[DONE]`` is an error."""
    parts: list[str] = []
    refusal: list[str] = []
    finish: str | None = None
    alternatives: Alternatives | None = None
    usage = Usage()
    done = False
    async for line in answer.aiter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise JudgeFailure(
                Status.ERROR, "judge stream sent an unreadable event", payload[:BODY_SHOWN]
            ) from None
        if chunk.get("usage"):
            usage = _usage(chunk)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            parts.append(delta.get("content") or "")
            refusal.append(delta.get("refusal") or "")
            finish = choice.get("finish_reason") or finish
            if alternatives is None:
                alternatives = first_alternatives(choice.get("logprobs"))
    text = "".join(parts)
    if not done or finish is None:
        raise JudgeFailure(Status.ERROR, "judge stream ended before it finished", text)
    _check_refusal("".join(refusal), finish, text)
    return Reply(text, finish, usage, alternatives)
