"""Where checkpoints live: ``tinker://RUN/KIND/NAME`` is ``DATA_DIR/runs/RUN/KIND/NAME/``.

KIND is ``weights`` (from ``save_state``: adapter and optimizer) or ``sampler_weights``
(from ``save_weights_for_sampler``: adapter only). Each checkpoint folder holds a
``checkpoint.json`` with the base model and LoRA settings, so a fresh server process
can list and load what an earlier one saved.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rl_verifier_server.runtime import UserInputError

KINDS = {"weights": "training", "sampler_weights": "sampler"}
SAFE_NAME = re.compile(r"[A-Za-z0-9._:\-]+")
META = "checkpoint.json"


@dataclass(frozen=True)
class CheckpointRef:
    run: str
    kind: str
    name: str

    @classmethod
    def parse(cls, path: str) -> CheckpointRef:
        if not path.startswith("tinker://"):
            raise UserInputError(f"checkpoint path must start with tinker://, got '{path}'")
        parts = path[len("tinker://") :].split("/")
        if (
            len(parts) != 3
            or parts[1] not in KINDS
            or not all(SAFE_NAME.fullmatch(p) for p in parts)
        ):
            raise UserInputError(
                f"checkpoint path '{path}' is not tinker://RUN/weights/NAME "
                "or tinker://RUN/sampler_weights/NAME"
            )
        return cls(*parts)

    @property
    def uri(self) -> str:
        return f"tinker://{self.run}/{self.kind}/{self.name}"


class CheckpointStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def directory(self, ref: CheckpointRef) -> Path:
        return self.root / "runs" / ref.run / ref.kind / ref.name

    def new(self, run: str, kind: str, name: str, overwrite: bool = True) -> CheckpointRef:
        if not SAFE_NAME.fullmatch(name):
            raise UserInputError(f"checkpoint name '{name}' may use only letters, digits, . _ - :")
        ref = CheckpointRef(run, kind, name)
        if not overwrite and (self.directory(ref) / META).exists():
            raise UserInputError(f"checkpoint {ref.uri} exists; pass overwrite=True to replace it")
        return ref

    def write_meta(self, ref: CheckpointRef, meta: dict[str, Any]) -> None:
        record = {**meta, "tinker_path": ref.uri, "time": datetime.now(UTC).isoformat()}
        target = self.directory(ref) / META
        partial = target.with_suffix(".partial")
        partial.write_text(json.dumps(record, indent=2))
        os.replace(partial, target)  # the checkpoint exists once its record does

    def read_meta(self, ref: CheckpointRef) -> dict[str, Any]:
        meta_file = self.directory(ref) / META
        if not meta_file.exists():
            raise UserInputError(f"no checkpoint at {ref.uri}")
        data: dict[str, Any] = json.loads(meta_file.read_text())
        return data

    def listing(self, run: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints as the SDK's ``Checkpoint`` objects, newest first."""
        pattern = f"runs/{run}/*/*/{META}" if run else f"runs/*/*/*/{META}"
        items = []
        for meta_file in self.root.glob(pattern):
            meta = json.loads(meta_file.read_text())
            ref = CheckpointRef.parse(meta["tinker_path"])
            items.append(
                {
                    "checkpoint_id": f"{ref.kind}/{ref.name}",
                    "checkpoint_type": KINDS[ref.kind],
                    "time": meta["time"],
                    "tinker_path": ref.uri,
                    "size_bytes": sum(p.stat().st_size for p in meta_file.parent.rglob("*")),
                    "public": False,
                }
            )
        return sorted(items, key=lambda c: c["time"], reverse=True)
