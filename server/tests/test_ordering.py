"""A model's requests run in seq_id order, once each, even when they arrive out of order."""

from __future__ import annotations

import asyncio

import pytest

from rl_verifier_server.scheduling import ordering
from rl_verifier_server.scheduling.ordering import SequencedQueue


def test_out_of_order_arrivals_run_in_seq_order() -> None:
    async def scenario() -> list[str]:
        ran: list[str] = []
        queue = SequencedQueue(lambda request_id, work: ran.append(request_id), first=1)
        queue.add(2, "r2", lambda: None)
        queue.add(3, "r3", lambda: None)
        assert ran == []  # waiting for seq 1
        queue.add(1, "r1", lambda: None)
        return ran

    assert asyncio.run(scenario()) == ["r1", "r2", "r3"]


def test_a_resent_seq_id_gets_the_first_request_id() -> None:
    async def scenario() -> tuple[str | None, list[str]]:
        ran: list[str] = []
        queue = SequencedQueue(lambda request_id, work: ran.append(request_id), first=1)
        queue.add(1, "first", lambda: None)
        return queue.lookup(1), ran

    known, ran = asyncio.run(scenario())
    assert known == "first" and ran == ["first"]


def test_a_missing_seq_id_is_skipped_after_a_grace_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ordering, "GAP_WAIT_S", 0.05)

    async def scenario() -> list[str]:
        ran: list[str] = []
        queue = SequencedQueue(lambda request_id, work: ran.append(request_id), first=1)
        queue.add(3, "r3", lambda: None)  # 1 and 2 never arrive (failed on the client)
        await asyncio.sleep(0.2)
        queue.add(1, "late", lambda: None)  # a late arrival still runs, at once
        return ran

    assert asyncio.run(scenario()) == ["r3", "late"]


def test_a_refused_seq_id_does_not_hold_up_its_successors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ordering, "GAP_WAIT_S", 3600.0)  # only void can let r2 through

    async def scenario() -> list[str]:
        ran: list[str] = []
        queue = SequencedQueue(lambda request_id, work: ran.append(request_id), first=1)
        queue.void(1)  # seq 1 was answered 400 before it was queued
        queue.add(2, "r2", lambda: None)
        return ran

    assert asyncio.run(scenario()) == ["r2"]
