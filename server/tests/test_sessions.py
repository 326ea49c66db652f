"""Sessions end when closed or silent; their training clients then free their places."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.limits import ServerLimits
from rl_verifier_server.state.service import Service
from rl_verifier_server.tinker import session_calls, training_calls


def test_a_silent_session_is_ended_and_frees_its_training_client(tmp_path: Path) -> None:
    now = [0.0]
    limits = ServerLimits(max_training_clients=1, session_timeout_s=60)
    service = Service(tmp_path, "cpu", limits=limits, clock=lambda: now[0])

    def create(session: str) -> str:
        body = {"session_id": session, "model_seq_id": 0, "base_model": "rlv/tiny-chat"}
        return training_calls.create_model(service, {**body, "lora_config": {"rank": 1}})

    async def scenario() -> None:
        quiet = service.sessions.create()
        outcome = await service.futures.wait(create(quiet), timeout_s=300)
        assert outcome is not None and outcome.error is None
        busy = service.sessions.create()
        with pytest.raises(StatusError, match="--max-training-clients") as full:
            create(busy)
        assert full.value.status == 429
        now[0] = 50.0
        service.sessions.use(busy)
        now[0] = 70.0  # quiet: silent for 70 s; busy: 20 s
        assert session_calls.end_idle_sessions(service) == 1
        outcome = await service.futures.wait(create(busy), timeout_s=300)
        assert outcome is not None and outcome.error is None
        with pytest.raises(StatusError) as ended:
            service.sessions.use(quiet)
        assert ended.value.status == 410  # the SDK stops heartbeating on 410

    try:
        asyncio.run(scenario())
    finally:
        service.close()


def test_an_unknown_session_is_taken_up_after_a_restart(tmp_path: Path) -> None:
    service = Service(tmp_path)
    try:
        service.sessions.use("s0123456789ab")  # from a previous server process
        assert service.sessions.ids() == ["s0123456789ab"]
        with pytest.raises(StatusError) as unknown:
            service.sessions.get("never-seen")  # looking one up does not create it
        assert unknown.value.status == 404
    finally:
        service.close()
