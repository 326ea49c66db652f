"""``rlv export``: a checkpoint of ``rlv serve`` as a standard peft adapter, without the SDK.

The source is a ``tinker://RUN/KIND/NAME`` path, looked up in the server's data directory,
or a run directory with a ``checkpoints.jsonl`` (from ``rlv train`` or the Tinker cookbook),
whose latest checkpoint is taken; an ``rlv train --backend local`` run keeps its server's
data directory inside it (``RUN_DIR/server``). Reads files only: no server needs to run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier_server.base.paths import default_data_dir
from rl_verifier_server.checkpoints.export import EXPORTED_FILES, export_adapter
from rl_verifier_server.checkpoints.store import KINDS, CheckpointRef, CheckpointStore

RUN_SERVER_DIR = "server"  # where rlv train --backend local keeps its server's data


@dataclass(frozen=True)
class Exported:
    checkpoint: str
    base_model: str
    rank: int
    files: list[str]


def export_checkpoint(source: str, out: Path, data_dir: Path | None, force: bool) -> Exported:
    if source.startswith("tinker://"):
        ref = CheckpointRef.parse(source, KINDS)
        store = CheckpointStore(data_dir or default_data_dir())
    else:
        run_dir = Path(source)
        ref = CheckpointRef.parse(latest_checkpoint(run_dir), KINDS)
        local = run_dir / RUN_SERVER_DIR
        store = CheckpointStore(data_dir or (local if local.is_dir() else default_data_dir()))
    if not store.exists(ref):
        raise UserError(
            f"no checkpoint {ref.uri} in {store.root} (pass the server's --data-dir; a "
            "checkpoint of the hosted Tinker service downloads with `tinker checkpoint "
            "download` instead)"
        )
    check_target(out, force)
    meta = store.read_meta(ref)
    folder = store.directory(ref)
    if ref.kind == "external_weights":
        files = copy_export(folder, out)
    else:
        files = export_adapter(folder, out, str(meta["base_model"]))
    return Exported(ref.uri, str(meta["base_model"]), int(meta["lora"]["rank"]), files)


def latest_checkpoint(run_dir: Path) -> str:
    """The ``tinker://`` path of the latest checkpoint a run directory lists."""
    from rl_verifier.train import RunDir

    log = RunDir(run_dir).checkpoints_file
    if not log.is_file():
        raise UserError(
            f"{run_dir} is neither a tinker:// path nor a run directory ({log} is missing)"
        )
    rows: list[dict[str, Any]] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line torn by a kill
        if isinstance(row, dict):
            rows.append(row)
    for row in reversed(rows):
        for key in ("path", "sampler_path", "state_path"):
            value = row.get(key)
            if isinstance(value, str) and value.startswith("tinker://"):
                return value
    raise UserError(f"{log} lists no checkpoint")


def check_target(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserError(f"--out {out} is not empty; pass --force to replace it")


def copy_export(folder: Path, out: Path) -> list[str]:
    """An ``external_weights`` checkpoint already is an export: its files as they are."""
    files = sorted(
        p.name for p in folder.iterdir() if p.name.removesuffix(".age") in EXPORTED_FILES
    )
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in files:
        shutil.copy2(folder / name, out / name)
    return files
