"""A step slower than the long poll of ``retrieve_future``: the SDK gets its result with no
"Retrying request ... because of try_again" warnings (hosted Tinker answers a poll that
ends first with 408, which the SDK re-polls quietly), and the server logs no failure."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest
import tinker
from tinker import types

from rl_verifier_server.base.testhooks import LONG_POLL_VARIABLE, SLOW_VARIABLE
from rl_verifier_server.launch import LocalServer

SLOW_S = 3.0
POLL_S = 0.5  # so one slow step outlasts about six polls


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    data = tmp_path_factory.mktemp("server-data")
    env = {SLOW_VARIABLE: f"optim_step={SLOW_S}", LONG_POLL_VARIABLE: str(POLL_S)}
    with LocalServer(data, log_path=data / "server.log", env=env) as running:
        yield running


def test_a_slow_step_is_waited_for_quietly(
    server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with tinker.ServiceClient(base_url=server.url, api_key="tml-local") as service:
        training = service.create_lora_training_client(base_model="rlv/tiny-chat", rank=2).result()
        datum = types.Datum(
            model_input=types.ModelInput.from_ints([5, 17, 42]),
            loss_fn_inputs={"target_tokens": [17, 42, 7], "weights": [1.0, 1.0, 1.0]},
        )
        training.forward_backward([datum], "cross_entropy").result()
        result = training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    assert result.metrics is not None
    retries = [r.getMessage() for r in caplog.records if "try_again" in r.getMessage()]
    assert retries == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [w for w in warnings if "Retrying" in w], warnings
    assert server.log_path is not None
    log = server.log_path.read_text()
    assert " -> 408" not in log and "retrieve_future" not in log, log


def test_a_pending_request_is_answered_408_with_its_queue_state(server: LocalServer) -> None:
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        session = http.post("/create_session", json={"tags": [], "sdk_version": "t"}).json()
        created = http.post(
            "/create_model",
            json={
                "session_id": session["session_id"],
                "model_seq_id": 0,
                "base_model": "rlv/tiny-chat",
                "lora_config": {"rank": 1},
            },
        ).json()
        model_id = poll_until_done(http, created["request_id"])["model_id"]
        step = http.post(
            "/optim_step",
            json={"model_id": model_id, "seq_id": 1, "adam_params": {"learning_rate": 1e-3}},
        ).json()
        first = http.post("/retrieve_future", json={"request_id": step["request_id"]})
        assert first.status_code == 408
        assert first.json()["queue_state"] == "active"
        assert "metrics" in poll_until_done(http, step["request_id"])


def poll_until_done(http: httpx.Client, request_id: str) -> dict[str, object]:
    while True:
        answer = http.post("/retrieve_future", json={"request_id": request_id})
        if answer.status_code != 408:
            answer.raise_for_status()
            result: dict[str, object] = answer.json()
            return result
