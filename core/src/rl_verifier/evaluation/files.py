"""An eval's folder: ``eval.json`` (what was asked), ``samples.jsonl`` (one row per sample,
appended and fsynced), ``summary.json``, ``report.png`` and ``report.html``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rl_verifier.base.contracts import Text
from rl_verifier.base.errors import UserError, validation_problems
from rl_verifier.evaluation.runner import Key
from rl_verifier.files.atomic import write_lines
from rl_verifier.files.jsonl import read_json_objects
from rl_verifier.train.rundir import RunDir, write_json

SETTINGS = "eval.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
# Settings a resumed eval must share with the first run: they change what a sample is.
SAME_ON_RESUME = ("model", "tasks", "reward", "verifier_config", "sampling", "environment",
                  "max_turns")  # fmt: skip


class EvalDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.run = RunDir(path)

    @property
    def settings_file(self) -> Path:
        return self.path / SETTINGS

    def exists(self) -> bool:
        return self.settings_file.is_file()

    def settings(self) -> dict[str, Any]:
        try:
            data = json.loads(self.settings_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"{self.settings_file}: cannot read: {exc}") from None
        return data if isinstance(data, dict) else {}

    def start(self, settings: dict[str, Any], resume: bool) -> None:
        """Create the folder, or check that a resumed one asks for the same samples."""
        if not resume:
            if self.exists():
                raise UserError(f"{self.path} already holds an eval; add --resume to continue it")
            self.path.mkdir(parents=True, exist_ok=True)
            write_json(self.settings_file, settings)
            return
        if not self.exists():
            raise UserError(f"{self.path}: no eval to resume ({SETTINGS} missing)")
        before = self.settings()
        for key in SAME_ON_RESUME:
            if before.get(key) != settings.get(key):
                raise UserError(
                    f"--resume: {self.path} was run with {key}={json.dumps(before.get(key))}, "
                    f"not {json.dumps(settings.get(key))}"
                )
        write_json(self.settings_file, settings)  # n, k and the threshold may change

    def rows(self) -> list[dict[str, Any]]:
        """The finished samples, each (task, index) once; a torn last line is dropped from
        the file too, so that appending continues on a whole line."""
        return self.resume_rows(lambda row: None).kept

    def resume_rows(self, problem: Callable[[dict[str, Any]], str | None]) -> Kept:
        """The finished samples for which ``problem`` finds nothing wrong, each (task,
        index) once; the file is rewritten to hold only those (a torn last line dropped
        too), so the rest are sampled again and appending continues on a whole line."""
        path = self.path / SAMPLES
        if not path.exists():
            return Kept([], 0, None)
        kept, why = [], None
        numbered = read_numbered_rows(path)
        for number, row in numbered:
            found = problem(row)
            if found is None:
                kept.append(row)
            elif why is None:
                why = f"{path}:{number}: {found}"
        write_lines(path, (json.dumps(row) for row in kept))
        return Kept(kept, len(numbered) - len(kept), why)

    def append(self, row: dict[str, Any]) -> None:
        self.run.append(SAMPLES, row)

    def write_samples(self, rows: list[dict[str, Any]]) -> None:
        write_lines(self.path / SAMPLES, (json.dumps(row) for row in rows))

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.path / SUMMARY, summary)


@dataclass
class Kept:
    """Rows read back and kept; how many were dropped, and why the first one was."""

    kept: list[dict[str, Any]]
    dropped: int
    why: str | None


class SampleRow(BaseModel):
    """The columns of a sample row that an eval reads back, as it writes them (others are
    kept as they are). The score is checked apart, against the run's reward."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    sample_index: int = Field(ge=0)
    completion: Text
    score: dict[str, Any]
    tokens: int = Field(default=0, ge=0)
    sampling_s: float = Field(default=0.0, ge=0, allow_inf_nan=False)


def read_numbered_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of an eval's ``samples.jsonl`` with their line numbers, each (task, index)
    once (the first); a row that is not one an eval writes is named by file and line."""
    rows: dict[Key, tuple[int, dict[str, Any]]] = {}
    for number, row in read_json_objects(path):
        try:
            SampleRow.model_validate_json(json.dumps(row), strict=True)
        except ValidationError as exc:
            problem = validation_problems(exc)[0]
            raise UserError(f"{path}:{number}: not an eval sample row: {problem}") from None
        except RecursionError:
            raise UserError(f"{path}:{number}: JSON nested too deeply to read") from None
        rows.setdefault((row["task_id"], row["sample_index"]), (number, row))
    return list(rows.values())


def read_sample_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an eval's ``samples.jsonl`` (``read_numbered_rows``, without the
    numbers)."""
    return [row for _, row in read_numbered_rows(path)]
