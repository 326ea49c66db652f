"""Judge calls cached by content, in core's verdict cache: the same call (endpoint URL and
request body, ``Outbound.key``), the same reply, and no second call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rl_verifier import DiskStore, Verdict, VerdictCache

MEMORY_ENTRIES = 4096


class CallCache:
    """Replies (text and token counts) by request; ``cache='off'`` keeps none."""

    def __init__(self, where: str, entries: int) -> None:
        self.store: VerdictCache | None = None
        if where != "off":
            disk = None if where == "memory" else DiskStore(Path(where).expanduser(), entries)
            self.store = VerdictCache(MEMORY_ENTRIES, disk)

    def get(self, key: str) -> dict[str, Any] | None:
        found = self.store.get(key) if self.store is not None else None
        return dict(found.verdict.info) if found is not None else None

    def put(self, key: str, model: str, reply: dict[str, Any], elapsed_s: float) -> None:
        if self.store is not None:
            self.store.put(key, f"judge:{model}", Verdict.ok(0.0, **reply), elapsed_s)

    def close(self) -> None:
        if self.store is not None and self.store.disk is not None:
            self.store.disk.close()


__all__ = ["CallCache"]
