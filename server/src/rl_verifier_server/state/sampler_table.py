"""The samplers clients hold: at most ``limit``, the least recently used released first.

A client's sampler (a sampling session id, or an ad hoc one) points at a sampler snapshot
on a model host (``runtime.snapshots``), or at the bare base model.

Mutations run on the compute thread (they free adapters on the model host); lookups may
come from the event loop. A released sampler's id is remembered for a while, so using it
later is answered with why it is gone rather than "unknown".
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rl_verifier import UserError

if TYPE_CHECKING:
    from rl_verifier_server.runtime import ModelHost

REMEMBER_RELEASED = 10_000


@dataclass
class ClientSampler:
    sampler_id: str
    session_id: str
    host: ModelHost
    adapter: str | None  # its snapshot id on the host; None: the base model itself
    model_path: str | None


class SamplerTable:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[str, ClientSampler] = OrderedDict()  # least recently used first
        self._released: OrderedDict[str, str] = OrderedDict()  # id -> why

    def __contains__(self, sampler_id: str) -> bool:
        return sampler_id in self._items

    def get(self, sampler_id: str) -> ClientSampler:
        sampler = self._items.get(sampler_id)
        if sampler is None:
            reason = self._released.get(sampler_id)
            if reason is not None:
                raise UserError(f"sampler '{sampler_id}' was released: {reason}")
            raise UserError(f"unknown sampler '{sampler_id}'")
        return sampler

    def use(self, sampler_id: str) -> ClientSampler:
        """The sampler, now the most recently used."""
        sampler = self.get(sampler_id)
        self._items.move_to_end(sampler_id)
        return sampler

    def using(self, model_path: str) -> list[ClientSampler]:
        """The samplers whose weights come from the checkpoint at ``model_path``."""
        return [s for s in list(self._items.values()) if s.model_path == model_path]

    def of_session(self, session_id: str) -> list[str]:
        return [s.sampler_id for s in list(self._items.values()) if s.session_id == session_id]

    def add(self, sampler: ClientSampler) -> None:
        """Hold ``sampler`` (replacing one of its id); past the limit, release the least
        recently used."""
        old = self._items.pop(sampler.sampler_id, None)
        if old is not None and old.adapter != sampler.adapter:
            free(old)
        self._items[sampler.sampler_id] = sampler
        self._released.pop(sampler.sampler_id, None)
        while len(self._items) > self.limit:
            self.release(
                next(iter(self._items)),
                f"this server keeps the {self.limit} most recently used sampler snapshots "
                "(rlv serve --max-samplers)",
            )

    def release(self, sampler_id: str, reason: str) -> None:
        free(self._items.pop(sampler_id))
        self._released[sampler_id] = reason
        while len(self._released) > REMEMBER_RELEASED:
            self._released.popitem(last=False)

    def release_session(self, session_id: str) -> None:
        for sampler_id in self.of_session(session_id):
            self.release(sampler_id, "its session ended")


def free(sampler: ClientSampler) -> None:
    if sampler.adapter is not None and sampler.host.snapshots.has(sampler.adapter):
        sampler.host.snapshots.drop(sampler.adapter)
