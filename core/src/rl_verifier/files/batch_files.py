"""The files of one ``rlv verify`` run: safe output paths and resuming a partial run."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_verifier.base.contracts import Sample, Score
from rl_verifier.base.errors import UserError
from rl_verifier.base.reward import Reward
from rl_verifier.base.validity import checked_score
from rl_verifier.files.atomic import write_lines
from rl_verifier.files.jsonl import is_stdio, partial_path, read_json_objects

Job = tuple[Reward, Sample]


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links, ``..`` or hard links)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(out: Path, inputs: Iterable[Path | None], option: str = "--out") -> None:
    """Refuse, before any work, an output that is a directory or one of the inputs."""
    if is_stdio(out):
        return
    if out.is_dir():
        raise UserError(
            f"{option} {out}: is a directory; give a file path, e.g. {out}/scores.jsonl"
        )
    for source in inputs:
        if source is not None and not is_stdio(source) and same_file(out, source):
            raise UserError(f"{option} {out}: is also an input ({source}); choose another path")


@dataclass
class Resumed:
    """Rows an interrupted run already wrote, the jobs still to score, and how many rows
    were dropped (``why``: the first one's file, line and reason)."""

    finished: list[tuple[Reward, Score]]
    todo: list[Job]
    dropped: int
    why: str | None = None


def resume(out: Path, jobs: Sequence[Job]) -> Resumed:
    """Keep the ``OUT.partial`` rows of this batch that pass the checks a fresh score
    passes for its reward (``validity.checked_score``: the same verifier, release and
    settings, a reward its status and verifier allow); the others are scored again.

    A line that is not a JSON object naming a sample (``task_id``, ``sample_index``) is a
    ``UserError`` naming the file and line. The partial file is rewritten (in one step) to
    hold exactly the kept rows, so the run appends after them.
    """
    by_key = {(sample.task.id, sample.index): (reward, sample) for reward, sample in jobs}
    partial = partial_path(out)
    kept: dict[tuple[str, int], tuple[Reward, Score]] = {}
    rows = read_json_objects(partial) if partial.exists() else []
    why = None
    for number, data in rows:
        key = sample_key(data)
        if key is None:
            raise UserError(f"{partial}:{number}: not a row this command wrote")
        job = by_key.get(key)
        checked = checked_score(data, job[0]) if job is not None else "not a sample of this batch"
        if isinstance(checked, Score) and job is not None:
            kept[key] = (job[0], checked)
        elif why is None:
            why = f"{partial}:{number}: {checked}"
    if partial.exists():
        write_lines(partial, (score.model_dump_json() for _, score in kept.values()))
    todo = [job for key, job in by_key.items() if key not in kept]
    return Resumed(list(kept.values()), todo, len(rows) - len(kept), why)


def sample_key(data: dict[str, Any]) -> tuple[str, int] | None:
    """The (task id, sample index) a row read back names, when it names one."""
    task, index = data.get("task_id"), data.get("sample_index")
    if isinstance(task, str) and isinstance(index, int) and not isinstance(index, bool):
        return task, index
    return None
