"""Shared helpers: raw Tinker HTTP calls (as the SDK makes them) against a live server."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

PROTO = "application/x-protobuf"


@dataclass
class Answer:
    """One call's end result: the HTTP status of the request, and for a request that was
    accepted as a future, how that future ended (category None: success)."""

    status: int
    value: Any = None
    error: str | None = None
    category: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status < 300 and self.category is None


class Api:
    """The Tinker HTTP API with an explicit ``X-API-Key`` (or none)."""

    def __init__(self, url: str, key: str | None) -> None:
        headers = {"X-API-Key": key} if key is not None else {}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=120)
        self.seq: dict[str, int] = {}

    def close(self) -> None:
        self.http.close()

    def post(self, route: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        kind = PROTO if route == "forward_backward" else "application/json"
        return self.http.post(
            f"/api/v1/{route}", content=content, headers={"Content-Type": kind, **(headers or {})}
        )

    def call(self, route: str, body: Any) -> Answer:
        """POST, then follow the future (if the answer is one) to its end."""
        return self.settle(self.post(route, body))

    def settle(self, response: httpx.Response) -> Answer:
        if response.status_code >= 300:
            return Answer(response.status_code, error=response.text)
        data = response.json()
        if not (isinstance(data, dict) and "request_id" in data):
            return Answer(response.status_code, value=data)
        while True:
            polled = self.post("retrieve_future", {"request_id": data["request_id"]})
            if polled.status_code == 408:  # the long poll ended first: poll again
                continue
            if polled.status_code >= 300:
                return Answer(polled.status_code, error=polled.text)
            if polled.headers.get("content-type", "").startswith(PROTO):
                return Answer(response.status_code, value=polled.content)
            outcome = polled.json()
            if "error" in outcome:
                category = str(outcome.get("category", "server"))
                return Answer(response.status_code, error=outcome["error"], category=category)
            return Answer(response.status_code, value=outcome)

    def session(self) -> str:
        response = self.post("create_session", {"tags": [], "sdk_version": "test"})
        response.raise_for_status()
        return str(response.json()["session_id"])

    def create_model(self, session: str, seq: int = 0, rank: int = 1, base: str = "") -> Answer:
        body = {
            "session_id": session,
            "model_seq_id": seq,
            "base_model": base or "rlv/tiny-chat",
            "lora_config": {"rank": rank, "seed": 0},
        }
        return self.call("create_model", body)

    def next_seq(self, model_id: str) -> int:
        self.seq[model_id] = self.seq.get(model_id, 0) + 1
        return self.seq[model_id]

    def finish(self, session: str) -> None:
        self.post(f"sessions/{session}/finish", {"reason": {"type": "success"}})


@pytest.fixture(scope="module")
def api_factory() -> Any:
    """``make(url, key)``: an ``Api`` closed at the end of the test module."""
    made: list[Api] = []

    def make(url: str, key: str | None) -> Api:
        made.append(Api(url, key))
        return made[-1]

    yield make
    for api in made:
        api.close()
