"""SDK sessions: a session lives while its client heartbeats (every 10 s) or calls.

A session ends when its client closes it (``sessions/ID/finish``) or sends nothing for the
server's session timeout; the server then releases its training clients and samplers.
A session id the server does not know (say, from before a restart) is taken up as a new
live session, so a client survives a server restart.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.names import check_name


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Session:
    session_id: str
    last_seen: float
    created: str = field(default_factory=now_iso)
    finished: bool = False
    models: list[str] = field(default_factory=list)


class Sessions:
    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = timeout_s
        self.clock = clock
        self._items: dict[str, Session] = {}

    def create(self) -> str:
        session_id = "s" + uuid.uuid4().hex[:12]
        self._items[session_id] = Session(session_id, self.clock())
        return session_id

    def find(self, session_id: str) -> Session | None:
        return self._items.get(session_id)

    def get(self, session_id: str) -> Session:
        """The session of that id, live or ended; unknown is a 404."""
        session = self._items.get(session_id)
        if session is None:
            raise StatusError(f"unknown session '{session_id}'", status=404)
        return session

    def use(self, session_id: object) -> Session:
        """The live session of that id, marked as seen (taken up if unknown)."""
        session_id = check_name(session_id, "session id")
        session = self._items.get(session_id)
        if session is None:
            session = self._items[session_id] = Session(session_id, self.clock())
        if session.finished:
            raise StatusError(f"session '{session_id}' has ended", status=410)
        session.last_seen = self.clock()
        return session

    def idle(self) -> list[Session]:
        """Live sessions that have sent nothing for longer than the timeout."""
        cutoff = self.clock() - self.timeout_s
        return [s for s in self._items.values() if not s.finished and s.last_seen < cutoff]

    def ids(self) -> list[str]:
        return sorted(self._items)
