"""Where checkpoints live: ``tinker://RUN/KIND/NAME`` is ``DATA_DIR/runs/RUN/KIND/NAME/``.

KIND is ``weights`` (from ``save_state``: adapter and optimizer) or ``sampler_weights``
(from ``save_weights_for_sampler``: adapter only). RUN and NAME are names as
``rl_verifier_server.names`` defines them. Each checkpoint folder holds a
``checkpoint.json`` with the base model and LoRA settings, so a fresh server process can
list and load what an earlier one saved.

A checkpoint is written whole into a hidden staging folder next to its place (record
included), then moved into place with ``rl_verifier.atomic.replace_directory``, which
moves an old folder of that name aside first and deletes it after. A server killed at
any moment leaves only hidden folders behind, which ``recover`` (run at start) deletes,
or puts back when the replacement never arrived. So a listed checkpoint is always
complete.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rl_verifier.atomic import replace_directory, write_text
from rl_verifier.errors import UserError
from rl_verifier_server.names import check_name, child_path
from rl_verifier_server.testhooks import pause_point

log = logging.getLogger("rl_verifier_server")

KINDS = {"weights": "training", "sampler_weights": "sampler"}
META = "checkpoint.json"
STAGING = ".tmp-"
RETIRED = ".old-"


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
    def parse(cls, path: object) -> CheckpointRef:
        if not isinstance(path, str) or not path.startswith("tinker://"):
            raise UserError(f"checkpoint path must start with tinker://, got {path!r}")
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in KINDS:
            raise UserError(
                f"checkpoint path '{path}' is not tinker://RUN/weights/NAME "
                "or tinker://RUN/sampler_weights/NAME"
            )
        return cls.of(*parts)

    @property
    def uri(self) -> str:
        return f"tinker://{self.run}/{self.kind}/{self.name}"


class CheckpointStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = root / "runs"

    def directory(self, ref: CheckpointRef) -> Path:
        return child_path(self.runs, ref.run, ref.kind, ref.name)

    def exists(self, ref: CheckpointRef) -> bool:
        return (self.directory(ref) / META).is_file()

    @contextlib.contextmanager
    def writing(self, ref: CheckpointRef, meta: dict[str, Any], overwrite: bool) -> Iterator[Path]:
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
            record = {**meta, "tinker_path": ref.uri, "time": datetime.now(UTC).isoformat()}
            write_text(staging / META, json.dumps(record, indent=2))
            aside = _hidden_sibling(final, RETIRED)
            replace_directory(
                staging, final, aside, lambda: pause_point("save_state.swap", ref.name)
            )
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def recover(self) -> None:
        """Clean up after a killed server: drop staging folders, restore a checkpoint that
        was moved aside for a replacement that never arrived, drop the rest."""
        for folder in self._kind_folders():
            hidden = sorted(p for p in folder.iterdir() if p.name.startswith("."))
            for path in hidden:
                name, found, _ = path.name[1:].rpartition(RETIRED)
                final = folder / name
                if found and name and not (final / META).is_file():
                    shutil.rmtree(final, ignore_errors=True)
                    os.replace(path, final)
                    log.warning("restored %s, whose replacement was interrupted", final)
                elif path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)

    def read_meta(self, ref: CheckpointRef) -> dict[str, Any]:
        meta_file = self.directory(ref) / META
        if not meta_file.is_file():
            raise UserError(f"no checkpoint at {ref.uri}")
        data: dict[str, Any] = json.loads(meta_file.read_text())
        return data

    def listing(self, run: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints as the SDK's ``Checkpoint`` objects, newest first."""
        items = []
        for folder in self._kind_folders(run):
            for entry in folder.iterdir():
                item = self._describe(folder.parent.name, folder.name, entry.name)
                if item is not None:
                    items.append(item)
        return sorted(items, key=lambda c: c["time"], reverse=True)

    def _describe(self, run: str, kind: str, name: str) -> dict[str, Any] | None:
        try:
            ref = CheckpointRef.of(run, kind, name)
            meta_file = self.directory(ref) / META
            meta = json.loads(meta_file.read_text()) if meta_file.is_file() else None
        except (UserError, OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("tinker_path") != ref.uri:
            return None
        if not isinstance(meta.get("time"), str):
            return None
        return {
            "checkpoint_id": f"{ref.kind}/{ref.name}",
            "checkpoint_type": KINDS[ref.kind],
            "time": meta["time"],
            "tinker_path": ref.uri,
            "size_bytes": sum(p.stat().st_size for p in meta_file.parent.rglob("*")),
            "public": False,
        }

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
