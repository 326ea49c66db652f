"""Writing files so that readers see the old content or the new, never a torn mix.

Every write goes to a hidden temporary sibling, is flushed to disk, and is moved into
place with ``os.replace`` (atomic on one filesystem). A crash leaves at most a
temporary file beside the target, never a half-written target. Whole directories are
written aside and moved into place with ``replace_directory``, or built aside and
published once with ``publish_directory``.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def _temporary(target: Path, mode: int) -> tuple[int, Path]:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.fchmod(fd, mode)  # mkstemp makes 0600; these files are for sharing
    return fd, Path(name)


def write_files(files: Mapping[Path, bytes | str], mode: int = 0o644) -> None:
    """Write every file to a temporary name first, then move them all into place.

    Either all targets get their new content, or (on an error before the moves) none
    does; temporary files never outlive the call.
    """
    staged: dict[Path, Path] = {}
    try:
        for target, data in files.items():
            fd, temporary = _temporary(target, mode)
            staged[target] = temporary
            with os.fdopen(fd, "wb") as handle:
                handle.write(data.encode("utf-8") if isinstance(data, str) else data)
                handle.flush()
                os.fsync(handle.fileno())
        for target, temporary in staged.items():
            os.replace(temporary, target)
    finally:
        for temporary in staged.values():
            temporary.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step."""
    write_files({path: text})


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Replace ``path`` with ``lines`` (newline-terminated) in one step."""
    write_text(path, "".join(line + "\n" for line in lines))


@contextmanager
def growing_file(path: Path, partial: Path, append: bool = False) -> Iterator[IO[str]]:
    """Write ``partial`` line by line and rename it to ``path`` when the block succeeds.

    The partial file is removed when the block fails, except after an interrupt
    (Ctrl-C) when ``append`` is set: a resumable writer keeps what it finished.
    """
    with partial.open("a" if append else "w", encoding="utf-8") as handle:
        try:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException as exc:
            if not (append and isinstance(exc, KeyboardInterrupt)):
                partial.unlink(missing_ok=True)
            raise
    os.replace(partial, path)


def replace_directory(
    staging: Path,
    target: Path,
    aside: Path | None = None,
    midway: Callable[[], object] | None = None,
) -> None:
    """Move the finished directory ``staging`` to ``target``, replacing any directory there.

    Two directories cannot be swapped in one step, so an existing ``target`` is first
    renamed to ``aside`` (default: the hidden sibling ``.NAME.old-XXXXXXXX``), then
    ``staging`` to ``target``, and the old copy is deleted. Between the two renames, where
    ``midway`` runs (a seam for crash tests), there is no ``target``: a process killed there
    leaves the old copy at ``aside`` for the caller's recovery to put back. When the second
    rename fails, the old copy is put back at once.
    """
    if not target.exists():
        os.replace(staging, target)
        return
    aside = aside or target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
    os.replace(target, aside)
    try:
        if midway is not None:
            midway()
        os.replace(staging, target)
    except BaseException:
        os.replace(aside, target)
        raise
    shutil.rmtree(aside, ignore_errors=True)


@contextmanager
def publish_directory(
    target: Path,
    accept_existing: Callable[[Path], bool] | None = None,
    clear_stale: bool = False,
    replace: bool = False,
) -> Iterator[Path]:
    """Build a directory aside and rename it to ``target`` in one step when the block succeeds.

    Yields a new empty folder, the hidden sibling ``.NAME.tmp-XXXXXXXX`` (missing parents
    are made), for the block to fill. On success it becomes ``target`` (an empty folder
    there is replaced); when the block raises, it is removed and ``target`` is untouched.
    When the rename fails because another publisher got there first, ``accept_existing``
    judges their ``target``: true keeps theirs and discards ours without an error; false,
    or no ``accept_existing``, raises the rename's ``OSError``. ``clear_stale`` first
    removes the staging folders of killed publishers: only for a caller holding a lock
    that keeps other publishers of ``target`` out. ``replace`` swaps the new folder in for
    an existing ``target`` whole (``replace_directory``) instead of keeping the first one.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{target.name}.tmp-"
    if clear_stale:
        for stale in target.parent.glob(glob.escape(prefix) + "*"):
            shutil.rmtree(stale, ignore_errors=True)
    staging = target.with_name(prefix + secrets.token_hex(4))
    staging.mkdir()
    try:
        yield staging
        if replace:
            replace_directory(staging, target)
            return
        try:
            os.rename(staging, target)
        except OSError:
            if accept_existing is None or not accept_existing(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
