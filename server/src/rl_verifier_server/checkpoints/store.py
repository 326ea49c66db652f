"""Where checkpoints live: ``tinker://RUN/KIND/NAME`` is ``DATA_DIR/runs/RUN/KIND/NAME/``.

KIND is ``weights`` (from ``save_state``: adapter and optimizer), ``sampler_weights``
(from ``save_weights_for_sampler``: adapter only) or ``external_weights`` (from
``save_weights_external``: a standard peft adapter to download, see ``export``). RUN and
NAME are names as ``rl_verifier_server.base.names`` defines them. Each checkpoint folder holds a
``checkpoint.json`` with the base model, LoRA settings, expiry and the client's
``user_metadata``, so a fresh server process can list and load what an earlier one saved.
``runs/RUN/run.json`` records the training run itself (base model, LoRA settings, its
``user_metadata``).

A checkpoint with a TTL expires at ``expires_at``: from then on it is left out of listings
and cannot be loaded, and ``expired`` names it for deletion.

A checkpoint is written whole into a hidden staging folder next to its place (record
included), then moved into place with ``rl_verifier.replace_directory``, which
moves an old folder of that name aside first and deletes it after. A server killed at
any moment leaves only hidden folders behind, which ``recover`` (run at start) deletes,
or puts back when the replacement never arrived. Deleting moves the folder to a hidden
name first, so a deletion interrupted half way is finished by ``recover``. So a listed
checkpoint is always complete.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier.internal import replace_directory, write_text
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.base.names import check_name, child_path
from rl_verifier_server.base.testhooks import pause_point, wall_clock

log = logging.getLogger("rl_verifier_server")

KINDS = {"weights": "training", "sampler_weights": "sampler", "external_weights": "external"}
LOADABLE = ("weights", "sampler_weights")  # what training and sampling read
META = "checkpoint.json"
RUN_RECORD = "run.json"
STAGING = ".tmp-"
RETIRED = ".old-"
DELETED = ".del-"
HIDDEN_NAME = re.compile(r"\.(.+)(\.tmp-|\.old-|\.del-)[0-9a-f]{8}")  # see _hidden_sibling
MIN_TTL_S = 3600  # the hosted API's range: one hour ...
MAX_TTL_S = 10 * 365 * 24 * 3600  # ... to ten years


@dataclass(frozen=True)
class CheckpointRef:
    run: str
    kind: str
    name: str

    @classmethod
    def of(cls, run: str, kind: str, name: str) -> CheckpointRef:
        if kind not in KINDS:
            raise UserError(f"checkpoint kind '{kind}' is not one of {sorted(KINDS)}")
        return cls(check_name(run, "training run id"), kind, check_name(name, "checkpoint name"))

    @classmethod
    def parse(cls, path: object, kinds: Collection[str] = LOADABLE) -> CheckpointRef:
        """The checkpoint a ``tinker://RUN/KIND/NAME`` path names, KIND one of ``kinds``."""
        if not isinstance(path, str) or not path.startswith("tinker://"):
            raise UserError(f"checkpoint path must start with tinker://, got {path!r}")
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in kinds:
            forms = " or ".join(f"tinker://RUN/{kind}/NAME" for kind in kinds)
            raise UserError(f"checkpoint path '{path}' is not {forms}")
        return cls.of(*parts)

    @property
    def uri(self) -> str:
        return f"tinker://{self.run}/{self.kind}/{self.name}"


def check_ttl(value: object) -> int | None:
    """A client's ``ttl_seconds``: None (never expires) or whole seconds in the allowed range."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"ttl_seconds must be an integer number of seconds, got {value!r:.40}")
    if not MIN_TTL_S <= value <= MAX_TTL_S:
        raise UserError(
            f"ttl_seconds must be between {MIN_TTL_S} (one hour) and {MAX_TTL_S} (ten years), "
            f"got {value}"
        )
    return value


class CheckpointStore:
    def __init__(self, root: Path, now: Callable[[], datetime] = wall_clock) -> None:
        self.root = root
        self.runs = root / "runs"
        self.now = now

    def directory(self, ref: CheckpointRef) -> Path:
        return child_path(self.runs, ref.run, ref.kind, ref.name)

    def exists(self, ref: CheckpointRef) -> bool:
        """Whether the checkpoint is there and has not expired."""
        return self._live_meta(ref) is not None

    def expires_at(self, ttl_seconds: int | None) -> str | None:
        if ttl_seconds is None:
            return None
        return (self.now() + timedelta(seconds=ttl_seconds)).isoformat()

    @contextlib.contextmanager
    def writing(
        self,
        ref: CheckpointRef,
        meta: dict[str, Any],
        overwrite: bool,
        ttl_seconds: int | None = None,
    ) -> Iterator[Path]:
        """Yield a staging folder path (not yet created) to write the checkpoint into; on
        leaving, add the record and move the folder into place. On error nothing changes."""
        final = self.directory(ref)
        if not overwrite and self.exists(ref):
            raise UserError(f"checkpoint {ref.uri} exists; pass overwrite=True to replace it")
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = _hidden_sibling(final, STAGING)
        try:
            yield staging
            staging.mkdir(exist_ok=True)
            record = {
                **meta,
                "tinker_path": ref.uri,
                "time": self.now().isoformat(),
                "expires_at": self.expires_at(ttl_seconds),
            }
            write_text(staging / META, json.dumps(record, indent=2))
            aside = _hidden_sibling(final, RETIRED)
            replace_directory(
                staging, final, aside, lambda: pause_point("save_state.swap", ref.name)
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def recover(self) -> None:
        """Clean up after a killed server: drop staging folders and deleted checkpoints,
        restore a checkpoint that was moved aside for a replacement that never arrived, drop
        the rest."""
        for folder in self._kind_folders():
            hidden = sorted(p for p in folder.iterdir() if p.name.startswith("."))
            for path in hidden:
                marked = HIDDEN_NAME.fullmatch(path.name)
                name = marked.group(1) if marked and marked.group(2) == RETIRED else ""
                final = folder / name
                if name and not (final / META).is_file():
                    shutil.rmtree(final, ignore_errors=True)
                    os.replace(path, final)
                    log.warning("restored %s, whose replacement was interrupted", final)
                elif path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)

    def read_meta(self, ref: CheckpointRef) -> dict[str, Any]:
        """The checkpoint's record; a missing or expired checkpoint is a user error."""
        meta = self._live_meta(ref)
        if meta is None:
            raise UserError(f"no checkpoint at {ref.uri} (never saved, deleted or expired)")
        return meta

    def delete(self, ref: CheckpointRef) -> None:
        """Remove the checkpoint (expired ones too): a 404 when there is none."""
        final = self.directory(ref)
        if not (final / META).is_file():
            raise StatusError(f"no checkpoint at {ref.uri}", status=404)
        doomed = _hidden_sibling(final, DELETED)
        os.replace(final, doomed)
        pause_point("delete.moved", ref.name)
        shutil.rmtree(doomed, ignore_errors=True)

    def set_ttl(self, ref: CheckpointRef, ttl_seconds: int | None) -> None:
        """Expire the checkpoint ``ttl_seconds`` from now (None: never)."""
        meta = self.read_meta(ref)
        meta["expires_at"] = self.expires_at(ttl_seconds)
        write_text(self.directory(ref) / META, json.dumps(meta, indent=2))

    def expired(self) -> list[CheckpointRef]:
        """Checkpoints whose TTL has run out, still on disk."""
        found = []
        for ref in self._refs():
            meta = self._meta(ref)
            if meta is not None and self._is_expired(meta):
                found.append(ref)
        return found

    def listing(self, run: str | None = None) -> list[dict[str, Any]]:
        """Live checkpoints as the SDK's ``Checkpoint`` objects, newest first."""
        items = []
        for ref in self._refs(run):
            meta = self._meta(ref)
            if meta is not None and not self._is_expired(meta):
                items.append(self._describe(ref, meta))
        return sorted(items, key=lambda c: c["time"], reverse=True)

    def write_run(self, run: str, record: dict[str, Any]) -> None:
        folder = child_path(self.runs, check_name(run, "training run id"))
        folder.mkdir(parents=True, exist_ok=True)
        write_text(folder / RUN_RECORD, json.dumps(record, indent=2))

    def read_run(self, run: str) -> dict[str, Any] | None:
        """What ``write_run`` recorded about a training run, if anything."""
        path = child_path(self.runs, check_name(run, "training run id")) / RUN_RECORD
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def run_ids(self) -> list[str]:
        """Runs with a record or checkpoints on disk."""
        if not self.runs.is_dir():
            return []
        return sorted(p.name for p in self.runs.iterdir() if not p.name.startswith("."))

    def _describe(self, ref: CheckpointRef, meta: dict[str, Any]) -> dict[str, Any]:
        folder = self.directory(ref)
        return {
            "checkpoint_id": f"{ref.kind}/{ref.name}",
            "checkpoint_type": KINDS[ref.kind],
            "time": meta["time"],
            "tinker_path": ref.uri,
            "size_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
            "public": False,
            "user_metadata": meta.get("user_metadata"),
            "expires_at": meta.get("expires_at"),
        }

    def _live_meta(self, ref: CheckpointRef) -> dict[str, Any] | None:
        meta = self._meta(ref)
        return None if meta is None or self._is_expired(meta) else meta

    def _meta(self, ref: CheckpointRef) -> dict[str, Any] | None:
        """The record of a complete checkpoint, or None."""
        try:
            meta = json.loads((self.directory(ref) / META).read_text())
        except (UserError, OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("tinker_path") != ref.uri:
            return None
        if not isinstance(meta.get("time"), str):
            return None
        return meta

    def _is_expired(self, meta: dict[str, Any]) -> bool:
        expires = meta.get("expires_at")
        if not isinstance(expires, str):
            return False
        try:
            return datetime.fromisoformat(expires) <= self.now()
        except (TypeError, ValueError):
            return False

    def _refs(self, run: str | None = None) -> list[CheckpointRef]:
        refs = []
        for folder in self._kind_folders(run):
            for entry in folder.iterdir():
                with contextlib.suppress(UserError):
                    refs.append(CheckpointRef.of(folder.parent.name, folder.name, entry.name))
        return refs

    def _kind_folders(self, run: str | None = None) -> list[Path]:
        """``runs/RUN/KIND`` folders that exist (for one run, or all)."""
        if run is not None:
            runs = [child_path(self.runs, check_name(run, "training run id"))]
        elif self.runs.is_dir():
            runs = [p for p in self.runs.iterdir() if not p.name.startswith(".")]
        else:
            runs = []
        return [run_dir / kind for run_dir in runs for kind in KINDS if (run_dir / kind).is_dir()]


def _hidden_sibling(final: Path, marker: str) -> Path:
    """``.NAME<marker>XXXXXXXX`` beside ``final``: what ``recover`` looks for."""
    return final.parent / f".{final.name}{marker}{uuid.uuid4().hex[:8]}"
