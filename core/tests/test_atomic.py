"""Atomic writes: a reader sees the old content or the new, and nothing is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from rl_verifier.atomic import replace_directory


def folder(path: Path, **files: str) -> Path:
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def contents(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in path.iterdir()}


def test_a_directory_moves_into_an_empty_place(tmp_path: Path) -> None:
    staging = folder(tmp_path / ".new", a="1")
    replace_directory(staging, tmp_path / "target")
    assert contents(tmp_path / "target") == {"a": "1"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


def test_a_directory_replaces_the_old_one_whole(tmp_path: Path) -> None:
    target = folder(tmp_path / "target", a="old", b="old")
    replace_directory(folder(tmp_path / ".new", a="new"), target)
    assert contents(target) == {"a": "new"}  # no file of the old copy survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


def test_midway_the_old_copy_waits_aside(tmp_path: Path) -> None:
    target = folder(tmp_path / "target", a="old")
    aside = tmp_path / ".target.retired"
    seen: list[tuple[bool, dict[str, str]]] = []
    replace_directory(
        folder(tmp_path / ".new", a="new"),
        target,
        aside=aside,
        midway=lambda: seen.append((target.exists(), contents(aside))),
    )
    assert seen == [(False, {"a": "old"})]  # what a crash at that moment leaves
    assert contents(target) == {"a": "new"} and not aside.exists()


def test_the_default_aside_name_is_hidden_beside_the_target(tmp_path: Path) -> None:
    target = folder(tmp_path / "target", a="old")
    names: list[str] = []
    replace_directory(
        folder(tmp_path / ".new", a="new"),
        target,
        midway=lambda: names.extend(p.name for p in tmp_path.iterdir()),
    )
    [aside] = [name for name in names if name.startswith(".target.old-")]
    assert sorted(names) == [".new", aside]


def test_a_failed_move_puts_the_old_copy_back(tmp_path: Path) -> None:
    target = folder(tmp_path / "target", a="old")
    with pytest.raises(FileNotFoundError):
        replace_directory(tmp_path / ".never-written", target)
    assert contents(target) == {"a": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]
