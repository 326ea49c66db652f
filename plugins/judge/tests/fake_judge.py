"""A local OpenAI-compatible ``/v1/chat/completions`` server for the judge's tests: a
scripted judge that grades by a fixed rule, and faults on request.

The model name picks the behaviour: ``scripted`` grades (a completion holding the
reference answer gets 8, else 2; without a reference, shorter is better); ``biased``
favours whatever it is shown first; ``fault:KIND[:N]`` injects a fault (for the first N
requests of that model, then grades, where N is given); ``fault:429=VALUE[:N]`` answers
429 with ``Retry-After: VALUE``. ``times`` holds when each request was read, ``waits``
each Retry-After sent and when, on the server's clock, before the client could read it.
The hostile faults answer without end (``huge``: a
body declaring 1 GiB; ``endless``: a chunked body that never ends; ``endless-sse``: valid
stream events, never ``[DONE]``; ``longline``: one stream line that never ends;
``headers``: header lines without end; ``gzip``: a small gzip body that inflates to
64 MiB) and record in ``sent`` how many bytes they wrote before the client hung up.
Asked for ``logprobs`` it replies
with one score digit (the rule's grade on the asked scale) and its first-token
alternatives: 0.7 on that digit, 0.1 on it after a space, 0.2 on "The" (``spread``: 0.5
on 2, 0.3 on 4, 0.2 on "The"; ``fault:lowmass``: 0.9 on "The"; ``fault:nologprobs``:
none sent); ``completions-shape`` sends them as ``top_logprobs: [{token: logprob}]``, as
the completions API does. Like a real judge that was fooled, the scripted judge reads
each ``<completion>`` block up to the first closing tag and decodes it as JSON; a block
it cannot decode (a completion that broke out) gets the top score. Its replies quote the
completion, so an injected ``Score:`` line or JSON verdict reaches the reply text, though
never its final line or its JSON structure.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BLOCK = re.compile(r'<completion(?: label="(?P<label>\w+)")?>(?P<body>.*?)</completion>', re.S)
REFERENCE = re.compile(r"<reference>(?P<body>.*?)</reference>", re.S)
DIGIT_ASK = re.compile(
    r"Score (?:response (?P<label>\w+)|the response) from (?P<low>\d) \(worst\) to (?P<high>\d)"
)
TOP = 10


def grade(text: str | None, reference: str | None) -> int:
    """The scripted rule; ``None`` (an undecodable block) is a fooled judge: top score."""
    if text is None:
        return TOP
    if reference is not None:
        return 8 if reference.lower() in text.lower() else 2
    return max(TOP - len(text) // 10, 0)


def decoded(body: str) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


class FakeJudge:
    """The server, on a free loopback port; ``requests`` counts requests per model."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.times: dict[str, list[float]] = {}  # when each request had been read
        self.waits: dict[str, list[tuple[float, str]]] = {}  # (answered after, Retry-After)
        self.bodies: list[dict[str, Any]] = []
        self.keys: list[str] = []  # Authorization headers received
        self.paths: list[str] = []  # request paths received
        self.encodings: list[str] = []  # Accept-Encoding headers received
        self._written: dict[str, int] = {}
        self._finished: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length))
                owner.keys.append(self.headers.get("authorization") or "")
                owner.paths.append(self.path)
                owner.encodings.append(self.headers.get("accept-encoding") or "")
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner._answer(self, body)  # a client past its deadline hung up

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def sent(self, model: str) -> int:
        """Bytes a hostile fault of ``model`` wrote, once its handler has finished."""
        assert self._finished[model].wait(60), f"{model} is still writing"
        return self._written[model]

    def settings(self, model: str = "scripted", **extra: Any) -> dict[str, Any]:
        """Judge settings for this server and behaviour."""
        return {"base_url": self.url, "model": model, "backoff_s": 0.01, **extra}

    # -- answers ---------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        model = str(body.get("model"))
        with self._lock:
            self.requests[model] += 1
            count = self.requests[model]
            self.times.setdefault(model, []).append(time.monotonic())
            self.bodies.append(body)
        kind, _, times = (
            model.partition(":")[2].partition(":") if model.startswith("fault:") else ("", "", "")
        )
        faulty = kind and (not times or count <= int(times))
        if faulty and kind in HOSTILE:
            self._finished.setdefault(model, threading.Event())
            written = 0
            try:
                for block in HOSTILE[kind](handler):
                    handler.wfile.write(block)
                    written += len(block)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what it was sent is counted
            finally:
                self._written[model] = written
                self._finished[model].set()
                handler.close_connection = True
            return
        if faulty and kind not in ("lowmass", "nologprobs"):
            self._fault(handler, kind, body)
            return
        kind = kind if faulty else ""
        if body.get("logprobs") and kind != "nologprobs":
            text, logprobs = self._digit_reply(body, model, kind)
            if body.get("stream"):
                self._stream(handler, model, text, logprobs)
            else:
                self._send(handler, 200, completion(model, text, logprobs))
            return
        if kind == "nologprobs":
            self._send(handler, 200, completion(model, "4"))
            return
        text = self._reply(body, biased=model == "biased")
        if body.get("stream"):
            self._stream(handler, model, text)
        else:
            self._send(handler, 200, completion(model, text))

    def _digit_reply(self, body: dict[str, Any], model: str, kind: str) -> tuple[str, Any]:
        """One score digit and the first token's alternatives (see the module's doc)."""
        user = body["messages"][-1]["content"]
        ask = DIGIT_ASK.search(user)
        assert ask is not None, user
        found = REFERENCE.search(user)
        reference = decoded(found["body"]) if found else None
        blocks = {m["label"]: decoded(m["body"]) for m in BLOCK.finditer(user)}
        text = blocks[ask["label"]] if ask["label"] else next(iter(blocks.values()))
        low, high = int(ask["low"]), int(ask["high"])
        digit = str(low + round(grade(text, reference) * (high - low) / TOP))
        tops = {digit: 0.7, " " + digit: 0.1, "The": 0.2}
        if model == "spread":
            tops = {"2": 0.5, "4": 0.3, "The": 0.2}
        elif kind == "lowmass":
            tops = {"The": 0.9, digit: 0.05}
        first = max(tops, key=lambda t: tops[t])
        if model == "completions-shape":
            return first, {"tokens": [first], "top_logprobs": [
                {t: math.log(p) for t, p in tops.items()}]}  # fmt: skip
        alternatives = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                        for t, p in tops.items()]  # fmt: skip
        entry = {"token": first, "logprob": math.log(tops[first]), "top_logprobs": alternatives}
        return first, {"content": [entry], "refusal": None}

    def _reply(self, body: dict[str, Any], biased: bool) -> str:
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        found = REFERENCE.search(user)
        reference = decoded(found["body"]) if found else None
        blocks = [(m["label"], decoded(m["body"])) for m in BLOCK.finditer(user)]
        grades = {label: grade(text, reference) for label, text in blocks}
        if biased and blocks:
            grades[blocks[0][0]] = TOP
        if "Winner" in system:
            a, b = grades.get("A", 0), grades.get("B", 0)
            winner = "A" if biased or a > b else "B" if b > a else "tie"
            return f"Comparing the two responses.\nWinner: {winner}"
        if "mapping each label" in system:
            return json.dumps(grades)
        label, text = blocks[0]
        score = grades[label]
        quote = (text or "")[:300]
        if "JSON object" in system:
            return json.dumps({"reason": f"The response says: {quote}", "score": score})
        return f'The response says: "{quote}".\nScore: {score}'

    def _fault(self, handler: BaseHTTPRequestHandler, kind: str, body: dict[str, Any]) -> None:
        if kind in ("429", "503") or kind.startswith("429="):
            after = kind.removeprefix("429=") if "=" in kind else "0.3"
            with self._lock:  # stamped before the client can have read the answer
                self.waits.setdefault(body["model"], []).append((time.monotonic(), after))
            self._send(handler, int(kind[:3]), {"error": {"message": "slow down"}},
                       {"Retry-After": after})  # fmt: skip
        elif kind in ("500", "401"):
            self._send(handler, int(kind), {"error": {"message": f"fault {kind}"}})
        elif kind == "slow":
            time.sleep(1.5)
            self._send(handler, 200, completion(body["model"], "Score: 5"))
        elif kind == "badjson":
            self._raw(handler, 200, b'{"choices": [{"message": ')
        elif kind == "nochoices":
            self._send(handler, 200, {"id": "x", "object": "chat.completion", "choices": []})
        elif kind == "truncated":
            handler.send_response(200)
            handler.send_header("content-type", "text/event-stream")
            handler.send_header("connection", "close")
            handler.end_headers()
            handler.wfile.write(sse(chunk(body["model"], {"role": "assistant", "content": "Sco"})))
            handler.wfile.flush()
            handler.close_connection = True
        elif kind == "refusal":
            answer = completion(body["model"], None)
            answer["choices"][0]["message"]["refusal"] = "I can't help with judging this."
            self._send(handler, 200, answer)
        elif kind == "filter":
            answer = completion(body["model"], "Score: 9")
            answer["choices"][0]["finish_reason"] = "content_filter"
            self._send(handler, 200, answer)
        elif kind == "prose":
            self._send(handler, 200, completion(body["model"], "I think it is pretty good!"))
        elif kind == "outofscale":
            self._send(handler, 200, completion(body["model"], "Clearly superb.\nScore: 11"))
        else:
            self._send(handler, 400, {"error": {"message": f"unknown fault {kind}"}})

    def _stream(
        self, handler: BaseHTTPRequestHandler, model: str, text: str, logprobs: Any = None
    ) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)] or [""]
        events = [chunk(model, {"role": "assistant", "content": ""})]
        events += [chunk(model, {"content": p}) for p in pieces]
        if logprobs is not None:
            events[1]["choices"][0]["logprobs"] = logprobs
        events.append(chunk(model, {}, finish="stop"))
        tail = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                "choices": [], "usage": usage(text)}  # fmt: skip
        for event in [*events, tail]:
            handler.wfile.write(sse(event))
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        handler.close_connection = True

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        FakeJudge._raw(handler, status, json.dumps(payload).encode(), headers)

    @staticmethod
    def _raw(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


GiB = 1 << 30
BLOCK_OF_A = b"a" * (1 << 20)


def _huge(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(GiB))
    handler.end_headers()
    yield b'{"choices": [{"message": {"content": "'
    for _ in range(GiB // len(BLOCK_OF_A)):
        yield BLOCK_OF_A


def _endless(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    start = b'{"choices": [{"message": {"content": "'
    yield b"%x\r\n%s\r\n" % (len(start), start)
    for _ in range(GiB // len(BLOCK_OF_A)):
        yield b"%x\r\n%s\r\n" % (len(BLOCK_OF_A), BLOCK_OF_A)


def _event_stream(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.end_headers()


def _endless_sse(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    _event_stream(handler)
    event = sse(chunk("endless", {"content": "a" * 1000}))
    batch = event * 256
    for _ in range(GiB // len(batch)):
        yield batch


def _long_line(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    _event_stream(handler)
    yield b'data: {"choices": [{"delta": {"content": "'
    for _ in range(GiB // len(BLOCK_OF_A)):
        yield BLOCK_OF_A


def _headers(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    yield b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    line = b"x-padding: " + b"a" * 1000 + b"\r\n"
    for _ in range(GiB // len(line)):
        yield line


def _gzip(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    """A gzip body that inflates to a valid 64 MiB reply ending in ``Score: 7``."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"choices": [{"message": {"content": "')]
    parts += [packer.compress(BLOCK_OF_A) for _ in range(64)]
    parts.append(packer.compress(b'\\nScore: 7"}, "finish_reason": "stop"}]}'))
    data = b"".join(parts) + packer.flush()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-encoding", "gzip")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    yield data


# Faults that write without end (or nearly): each yields the bytes to send, in order.
HOSTILE: dict[str, Callable[[BaseHTTPRequestHandler], Iterator[bytes]]] = {
    "huge": _huge,
    "endless": _endless,
    "endless-sse": _endless_sse,
    "longline": _long_line,
    "headers": _headers,
    "gzip": _gzip,
}


def usage(text: str | None) -> dict[str, int]:
    out = len((text or "").split())
    return {"prompt_tokens": 100, "completion_tokens": out, "total_tokens": 100 + out}


def completion(model: str, text: str | None, logprobs: Any = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": logprobs,
                "finish_reason": "stop",
            }
        ],
        "usage": usage(text),
    }


def chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()
