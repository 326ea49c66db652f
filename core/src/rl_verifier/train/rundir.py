"""The run directory: config echo, per-step metrics, sampled rollouts, checkpoints.

Rows are appended and fsynced one at a time. On resume, rows of steps at or after the
checkpoint being resumed from are dropped (they will be redone), as is a torn last line,
so no step appears twice and none is lost after the checkpoint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeGuard

from rl_verifier.base.errors import UserError
from rl_verifier.files.atomic import write_lines, write_text
from rl_verifier.files.jsonl import read_json_objects

# The one home of the run directory's file names.
CONFIG = "config.json"  # the run's settings, as --resume reads them
METRICS = "metrics.jsonl"  # a row per step (and per held-out evaluation)
SAMPLES = "samples.jsonl"  # sampled rollouts, a few per step
CHECKPOINTS = "checkpoints.jsonl"  # saved states and sampler weights
EVAL_SAMPLES = "eval_samples.jsonl"  # the held-out evaluations' samples
SERVER_LOG = "server.log"  # the embedded rlv serve's log (backend = "local")
SERVER_DATA = "server"  # the embedded rlv serve's data folder
REPORT = "report.html"  # rlv report's page
FILES = (METRICS, SAMPLES, CHECKPOINTS, EVAL_SAMPLES)  # the logs a resume rewinds


class RunDir:
    """One run's folder: each file's name is a constant above, each file a path here."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def config_file(self) -> Path:
        return self.path / CONFIG

    @property
    def checkpoints_file(self) -> Path:
        return self.path / CHECKPOINTS

    @property
    def server_log(self) -> Path:
        return self.path / SERVER_LOG

    @property
    def server_data(self) -> Path:
        return self.path / SERVER_DATA

    def refuse_existing(self) -> None:
        """A new run must not write into an earlier one."""
        if (self.path / METRICS).exists():
            raise UserError(f"{self.path} already holds a run; resume it with --resume {self.path}")

    def create(self, config: dict[str, Any]) -> None:
        self.refuse_existing()
        self.path.mkdir(parents=True, exist_ok=True)
        write_json(self.config_file, config)

    def append(self, name: str, row: dict[str, Any]) -> None:
        with (self.path / name).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def rows(self, name: str) -> list[dict[str, Any]]:
        """The log's rows; a line torn by a kill is left out, other damage is named."""
        path = self.path / name
        return [row for _, row in read_json_objects(path)] if path.is_file() else []

    def stepped_rows(self, name: str) -> list[tuple[int, dict[str, Any]]]:
        """The log's rows with their line numbers, for a resume that decides on their
        steps: a ``step`` that is not a whole number is a ``UserError`` naming file and line."""
        path = self.path / name
        rows = read_json_objects(path) if path.is_file() else []
        for number, row in rows:
            if "step" in row and not is_step(row["step"]):
                raise UserError(f"{path}:{number}: step {row['step']!r} is not a step number")
        return rows

    def last_checkpoint(self) -> dict[str, Any] | None:
        """The saved state of the latest step; a state row without a string ``path`` or a
        step number is a ``UserError`` naming file and line."""
        saved = []
        for number, row in self.stepped_rows(CHECKPOINTS):
            if row.get("kind") != "state":
                continue
            step, path = row.get("step"), row.get("path")
            if not (is_step(step) and step >= 0 and isinstance(path, str) and path):
                raise UserError(
                    f"{self.checkpoints_file}:{number}: not a saved state this run wrote "
                    "(step, path)"
                )
            saved.append(row)
        return max(saved, key=lambda row: int(row["step"])) if saved else None

    def rewind(self, step: int) -> None:
        """Keep only rows of steps before ``step`` in every log."""
        for name in FILES:
            path = self.path / name
            if not path.exists():
                continue
            rows = [row for _, row in self.stepped_rows(name)]
            kept = [row for row in rows if row.get("step", -1) < step]
            if name == CHECKPOINTS:
                kept = [row for row in rows if row.get("step", -1) <= step]
            write_lines(path, (json.dumps(row) for row in kept))


def is_step(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a step number as the run writes it: a whole number (warm-up
    steps are negative)."""
    return isinstance(value, int) and not isinstance(value, bool)


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2))
