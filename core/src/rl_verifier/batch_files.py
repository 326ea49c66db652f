"""The files of one ``rlv verify`` run: safe output paths and resuming a partial run."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rl_verifier.atomic import write_lines
from rl_verifier.contracts import Score
from rl_verifier.engine import Sample
from rl_verifier.errors import UserError
from rl_verifier.jsonl import is_stdio, partial_path, read_finished
from rl_verifier.reward import Reward

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
    """Rows an interrupted run already wrote, and the jobs still to score."""

    finished: list[tuple[Reward, Score]]
    todo: list[Job]
    dropped: int


def resume(out: Path, jobs: Sequence[Job]) -> Resumed:
    """Keep ``OUT.partial`` rows of this batch scored with the same verifier provenance.

    The partial file is rewritten (in one step) to hold exactly the kept rows, so the
    run appends after them.
    """
    by_key = {(sample.task.id, sample.index): (reward, sample) for reward, sample in jobs}
    partial = partial_path(out)
    kept: dict[tuple[str, int], tuple[Reward, Score]] = {}
    rows = read_finished(partial, Score)
    for score in rows:
        job = by_key.get((score.task_id, score.sample_index))
        if job is not None and score.verifier == job[0].ref:
            kept[(score.task_id, score.sample_index)] = (job[0], score)
    if partial.exists():
        write_lines(partial, (score.model_dump_json() for _, score in kept.values()))
    todo = [job for key, job in by_key.items() if key not in kept]
    return Resumed(list(kept.values()), todo, len(rows) - len(kept))
