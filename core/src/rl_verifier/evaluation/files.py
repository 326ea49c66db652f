"""An eval's folder: ``eval.json`` (what was asked), ``samples.jsonl`` (one row per sample,
appended and fsynced), ``summary.json``, ``report.png`` and ``report.html``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rl_verifier.atomic import write_lines
from rl_verifier.errors import UserError
from rl_verifier.evaluation.runner import Key
from rl_verifier.jsonl import read_json_objects
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
        path = self.path / SAMPLES
        if not path.exists():
            return []
        rows = read_sample_rows(path)
        write_lines(path, (json.dumps(row) for row in rows))
        return rows

    def append(self, row: dict[str, Any]) -> None:
        self.run.append(SAMPLES, row)

    def write_samples(self, rows: list[dict[str, Any]]) -> None:
        write_lines(self.path / SAMPLES, (json.dumps(row) for row in rows))

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.path / SUMMARY, summary)


def read_sample_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an eval's ``samples.jsonl``, each (task, index) once; a row that is not
    one an eval writes is named by file and line."""
    rows: dict[Key, dict[str, Any]] = {}
    for number, row in read_json_objects(path):
        task, index, score = row.get("task_id"), row.get("sample_index"), row.get("score")
        if not (isinstance(task, str) and isinstance(index, int) and isinstance(score, dict)):
            raise UserError(
                f"{path}:{number}: not an eval sample row (task_id, sample_index, score)"
            )
        rows.setdefault((task, index), row)
    return list(rows.values())
