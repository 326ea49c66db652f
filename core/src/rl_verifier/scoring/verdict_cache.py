"""A content-addressed cache of verdicts, for verifiers that declare themselves
deterministic: the same verifier (name, release, settings hash), task and completion
always get the same verdict, so RL groups with repeated completions, resumed runs and
re-scored evals pay for each distinct sample once.

Only ``ok`` and ``invalid`` verdicts are kept: a ``timeout`` or an ``error`` says nothing
about the sample and is tried again. A row read back from disk is checked as a fresh verdict
is (``validity``): a corrupt or foreign one is skipped, its sample scored again, and the
first such row is reported in one warning. By default the cache lives in the scoring engine's
process (an LRU of ``MEMORY_ENTRIES``); ``RLV_VERDICT_CACHE=PATH`` adds an on-disk store
(SQLite, shared safely by processes and reward-server workers, at most ``DISK_ENTRIES``
rows, oldest dropped first) in front of which the LRU sits; ``RLV_VERDICT_CACHE=off``
turns caching off (every sample is judged, as benchmarks of scoring speed need).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rl_verifier.base.contracts import Completion, Status, Task, Verdict
from rl_verifier.base.errors import UserError
from rl_verifier.base.validity import reusable_problem
from rl_verifier.base.verifier import Verifier

log = logging.getLogger(__name__)

CACHE_VARIABLE = "RLV_VERDICT_CACHE"
OFF = "off"
MEMORY_ENTRIES = 65_536
DISK_ENTRIES = 1_000_000
KEPT = frozenset({Status.OK, Status.INVALID})
SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    verifier TEXT NOT NULL,
    verdict TEXT NOT NULL,
    elapsed_s REAL NOT NULL,
    stored_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class Cached:
    """A verdict as first judged, and how long that took."""

    verdict: Verdict
    elapsed_s: float


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def task_digest(task: Task) -> str | None:
    """A digest of the whole task (``None`` when it cannot be encoded, e.g. nested past
    pydantic's limit: such a sample is never cached)."""
    try:
        return _digest(task.model_dump(mode="json"))
    except (ValueError, TypeError, RecursionError):
        return None


def verdict_key(
    verifier: str, version: str, config_hash: str, task: str, completion: Completion
) -> str | None:
    """The cache key: a digest of the verifier, the task's digest and the completion."""
    try:
        body = completion.model_dump(mode="json", exclude={"task_id"})
    except (ValueError, TypeError, RecursionError):
        return None
    return _digest([verifier, version, config_hash, task, body])


class VerdictCache:
    """An LRU in this process, optionally over a shared on-disk store."""

    def __init__(self, entries: int = MEMORY_ENTRIES, disk: DiskStore | None = None) -> None:
        self.entries = entries
        self.disk = disk
        self._memory: OrderedDict[str, Cached] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str, verifier: Verifier | None = None) -> Cached | None:
        """The verdict kept under ``key``; one read from disk must be a verdict ``verifier``
        (when given) could return, else it is skipped (a miss)."""
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
        if found is None and self.disk is not None:
            found = self.disk.get(key, verifier)
            if found is not None:
                self._remember(key, found)
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, key: str, verifier: str, verdict: Verdict, elapsed_s: float) -> None:
        """Keep ``verdict`` if it judged the sample (``ok`` or ``invalid``)."""
        if verdict.status not in KEPT:
            return
        cached = Cached(verdict, elapsed_s)
        self._remember(key, cached)
        if self.disk is not None:
            self.disk.put(key, verifier, cached)

    def _remember(self, key: str, cached: Cached) -> None:
        with self._lock:
            self._memory[key] = cached
            self._memory.move_to_end(key)
            while len(self._memory) > self.entries:
                self._memory.popitem(last=False)


class DiskStore:
    """Verdicts in one SQLite file, safe to share between processes."""

    def __init__(self, path: Path, max_entries: int = DISK_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._puts = 0
        self._warned = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(SCHEMA)
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"{CACHE_VARIABLE}={path}: cannot use it as a cache: {exc}") from None

    def get(self, key: str, verifier: Verifier | None = None) -> Cached | None:
        """The row under ``key``, if it holds a verdict ``verifier`` (when given) could
        have returned; a corrupt, foreign or unreadable row is skipped with a warning."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT verifier, verdict, elapsed_s FROM verdicts WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            self._skipped(f"cannot read it ({exc}): samples are scored without it")
            return None
        if row is None:
            return None
        found = read_row(row, verifier)
        if isinstance(found, str):
            self._skipped(f"skipped a corrupt or foreign row ({found}) and scored its sample again")
            return None
        return found

    def put(self, key: str, verifier: str, cached: Cached) -> None:
        row = (key, verifier, cached.verdict.model_dump_json(), cached.elapsed_s, time.time())
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?)", row)
                self._db.commit()
                self._puts += 1
                if self._puts % 1000 == 0:
                    self._prune()
        except sqlite3.Error as exc:
            self._skipped(f"cannot write it ({exc}): verdicts are not kept there")

    def _skipped(self, what: str) -> None:
        """Warn once per store: the cache only saves work, so scoring goes on without it."""
        if not self._warned:
            self._warned = True
            log.warning(
                "verdict cache %s: %s (later problems with this file are not reported)",
                self.path,
                what,
            )

    def _prune(self) -> None:
        (count,) = self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()
        if count > self.max_entries:
            self._db.execute(
                "DELETE FROM verdicts WHERE key IN "
                "(SELECT key FROM verdicts ORDER BY stored_at LIMIT ?)",
                (count - self.max_entries,),
            )
            self._db.commit()

    def stats(self) -> dict[str, object]:
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT verifier, COUNT(*), SUM(elapsed_s) FROM verdicts GROUP BY verifier"
                ).fetchall()
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot read it as a verdict cache: {exc}") from None
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return {
            "path": str(self.path),
            "bytes": size,
            "entries": sum(count for _, count, _ in rows),
            "verifiers": {
                name: {"entries": count, "mean_scoring_s": total / count}
                for name, count, total in rows
            },
        }

    def clear(self) -> int:
        try:
            with self._lock:
                removed = self._db.execute("DELETE FROM verdicts").rowcount
                self._db.commit()
                self._db.execute("VACUUM")
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot clear it: {exc}") from None
        return int(removed)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def read_row(row: tuple[Any, ...], verifier: Verifier | None) -> Cached | str:
    """A stored ``(verifier, verdict, elapsed_s)`` row as a verdict ``verifier`` could have
    returned, or why it is not one."""
    name, text, elapsed = row
    if verifier is not None and name != verifier.name:
        return f"a verdict of {name!r} under a key of {verifier.name!r}"
    if not isinstance(text, str | bytes):
        return "no verdict JSON"
    try:
        verdict = Verdict.model_validate_json(text, strict=True)
    except ValidationError as exc:
        return f"not a verdict: {exc.errors()[0]['msg']}"
    if not isinstance(elapsed, int | float) or not math.isfinite(elapsed) or elapsed < 0:
        return f"elapsed_s {elapsed!r}"
    problem = reusable_problem(verifier, verdict)
    return Cached(verdict, float(elapsed)) if problem is None else problem


def disk_path() -> Path | None:
    """The on-disk store named by ``RLV_VERDICT_CACHE``, if any."""
    value = os.environ.get(CACHE_VARIABLE, "").strip()
    return Path(value).expanduser() if value and value != OFF else None


def default_cache() -> VerdictCache | None:
    """The in-process LRU, over the on-disk store when ``RLV_VERDICT_CACHE`` names one;
    ``None`` when it says ``off``."""
    if os.environ.get(CACHE_VARIABLE, "").strip() == OFF:
        return None
    path = disk_path()
    return VerdictCache(disk=DiskStore(path) if path is not None else None)
