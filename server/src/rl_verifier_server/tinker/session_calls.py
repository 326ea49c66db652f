"""Ending sessions: closed by their client, or silent past the timeout. An ended session's
training clients and samplers are released (their adapters freed on the compute thread)."""

from __future__ import annotations

import asyncio
import logging

from rl_verifier_server.base.names import check_name
from rl_verifier_server.state.service import Service
from rl_verifier_server.state.sessions import Session
from rl_verifier_server.tinker import checkpoint_lifecycle

log = logging.getLogger("rl_verifier_server")


def finish_session(service: Service, session_id: str, reason: str) -> None:
    """The client closed its session (again is fine); ``reason`` is the SDK's finish reason
    (``success``, ``errored`` or ``interrupted``)."""
    session = service.sessions.find(check_name(session_id, "session id"))
    if session is None or not session.finished:
        log.info("session %s closed by its client: %s", session_id, reason)
        end_session(service, service.sessions.use(session_id))


def end_session(service: Service, session: Session) -> None:
    """Mark the session ended and release its training clients and samplers."""
    session.finished = True
    released = service.clients.release_session(session)

    def release() -> None:
        for client in released:
            if client.host.trainers.has(client.adapter):
                client.host.trainers.drop(client.adapter)
        service.samplers.release_session(session.session_id)
        service.stability.release_session(session.session_id)

    service.compute.later(release)


def end_idle_sessions(service: Service) -> int:
    """End sessions silent for longer than the timeout; how many were ended."""
    idle = service.sessions.idle()
    for session in idle:
        log.info(
            "session %s ended: nothing from it for %.0f s",
            session.session_id,
            service.sessions.timeout_s,
        )
        end_session(service, session)
    return len(idle)


async def housekeeping(service: Service) -> None:
    """End idle sessions and delete expired checkpoints, now and then, for as long as the
    server runs."""
    interval = max(1.0, min(30.0, service.sessions.timeout_s / 4))
    while True:
        await asyncio.sleep(interval)
        end_idle_sessions(service)
        try:
            await service.compute.run(lambda: checkpoint_lifecycle.expire(service))
        except Exception:  # a failed sweep is retried next time round
            log.exception("sweeping expired checkpoints failed")
