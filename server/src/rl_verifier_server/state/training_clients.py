"""Training clients (the SDK's ``model_id``s): one LoRA adapter each, on a shared host.

A client belongs to a session and lives until that session ends. Creation is counted
against the server's limit from the moment it is queued. Each client's requests run in
``seq_id`` order (``ordering``).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rl_verifier import UserError
from rl_verifier_server.base import fields
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.names import check_name
from rl_verifier_server.runtime import LoraSpec
from rl_verifier_server.scheduling.compute import ComputeThread
from rl_verifier_server.scheduling.futures import Outcome
from rl_verifier_server.scheduling.ordering import SequencedQueue
from rl_verifier_server.state.sessions import Session, Sessions, now_iso

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost


@dataclass
class TrainingClient:
    """One training client: its session, host, adapter and request order."""

    model_id: str
    session_id: str
    base_model: str
    host: ModelHost
    spec: LoraSpec
    queue: SequencedQueue
    adapter: str = ""  # its adapter id on the host
    last_request_time: str = field(default_factory=now_iso)
    released: bool = False

    def check_live(self) -> None:
        if self.released:
            raise UserError(f"training client '{self.model_id}' was released: its session ended")

    @contextlib.contextmanager
    def checking(self, seq_id: int) -> Iterator[None]:
        """Checks of an ordered request: when one fails, its ``seq_id`` is given up, so the
        client's later requests do not wait for it."""
        try:
            yield
        except UserError:
            self.queue.void(seq_id)
            raise


Make = Callable[[], tuple[str, "ModelHost", LoraSpec]]  # base model name, host, spec


class TrainingClients:
    """The live training clients, by model id, within the server's limit."""

    def __init__(self, limit: int, sessions: Sessions, compute: ComputeThread) -> None:
        self.limit = limit
        self.sessions = sessions
        self.compute = compute
        self.live: dict[str, TrainingClient] = {}
        self._creating: set[str] = set()  # model ids whose creation is queued

    def use(self, model_id: object) -> TrainingClient:
        """The live client of that id; its session counts as seen."""
        if not isinstance(model_id, str):
            raise UserError("the request needs 'model_id' (a string)")
        client = self.live.get(model_id)
        if client is None:
            raise UserError(
                f"unknown training client '{model_id}' (never created, from before a "
                "restart, or released when its session ended)"
            )
        session = self.sessions.find(client.session_id)
        if session is not None and not session.finished:
            session.last_seen = self.sessions.clock()
        return client

    def submit(
        self, client: TrainingClient, seq_id: int, kind: str, work: Callable[[], object]
    ) -> str:
        """Queue ``work`` in the client's ``seq_id`` order; its future id."""
        client.last_request_time = now_iso()
        return self.compute.submit_in_order(client.queue, seq_id, kind, work)

    def new_id(self, session: Session, request: dict[str, Any]) -> str:
        seq = fields.integer(request, "model_seq_id", minimum=0)
        return check_name(f"{session.session_id}:train:{seq}", "training run id")

    def creation(
        self, model_id: str, session: Session, make: Make, answer: dict[str, Any]
    ) -> Callable[[], Outcome]:
        """Work that creates the client once (re-sent requests find it) with ``make``."""
        reserved = self._reserve(model_id)

        def work() -> Outcome:
            try:
                if model_id not in self.live:
                    if session.finished:
                        raise StatusError(f"session '{session.session_id}' has ended", 410)
                    base, host, spec = make()
                    self._register(model_id, session, base, host, spec)
            finally:
                if reserved:
                    self._creating.discard(model_id)
            return Outcome(json=answer)

        return work

    def release_session(self, session: Session) -> list[TrainingClient]:
        """Take the session's clients out of service; the caller frees their adapters."""
        released = [self.live.pop(m) for m in session.models if m in self.live]
        for client in released:
            client.released = True
        return released

    def _reserve(self, model_id: str) -> bool:
        """Count a new client against the limit; False when it already exists."""
        if model_id in self.live or model_id in self._creating:
            return False
        count = len(self.live) + len(self._creating)
        if count >= self.limit:
            raise StatusError(
                f"this server already holds {count} training clients, its limit "
                "(rlv serve --max-training-clients); they are released when their "
                "sessions end",
                status=429,
            )
        self._creating.add(model_id)
        return True

    def _register(
        self, model_id: str, session: Session, base: str, host: ModelHost, spec: LoraSpec
    ) -> None:
        queue = SequencedQueue(self.compute.dispatch, first=1)
        self.live[model_id] = TrainingClient(
            model_id, session.session_id, base, host, spec, queue, slot("m", model_id)
        )
        session.models.append(model_id)


def slot(prefix: str, key: str) -> str:
    """A safe internal adapter name for an external id (ids hold ':' and '/')."""
    return prefix + hashlib.sha1(key.encode()).hexdigest()[:16]
