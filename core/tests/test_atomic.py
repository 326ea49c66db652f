"""Atomic writes: a reader sees the old content or the new, and nothing is left behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rl_verifier import publish_directory
from rl_verifier.internal import replace_directory


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


# -- publish_directory: build aside, appear whole or not at all ---------------------------


def test_a_published_directory_appears_whole_and_nothing_else_is_left(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "index"  # missing parents are made
    with publish_directory(target) as staging:
        assert staging.parent == target.parent and staging.name.startswith(".index.tmp-")
        (staging / "a").write_text("1")
        assert not target.exists()  # readers never see it half-built
    assert contents(target) == {"a": "1"}
    assert [p.name for p in target.parent.iterdir()] == ["index"]


def fail_midway(target: Path) -> None:
    with publish_directory(target) as staging:
        (staging / "a").write_text("half")
        raise RuntimeError("build failed")


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="build failed"):
        fail_midway(tmp_path / "index")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_folder_at_the_target_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    with publish_directory(tmp_path / "plugin") as staging:
        (staging / "a").write_text("1")
    assert contents(tmp_path / "plugin") == {"a": "1"}
    assert [p.name for p in tmp_path.iterdir()] == ["plugin"]


def race(target: Path, accept_existing: Callable[[Path], bool] | None) -> None:
    """Two publishers of ``target``: the one that starts second finishes first."""
    with publish_directory(target, accept_existing) as slow:
        (slow / "who").write_text("slow")
        with publish_directory(target, accept_existing) as fast:
            (fast / "who").write_text("fast")


def test_of_two_publishers_one_wins_and_the_other_accepts_it(tmp_path: Path) -> None:
    race(tmp_path / "model", accept_existing=Path.is_dir)
    assert contents(tmp_path / "model") == {"who": "fast"}  # no error, no mix of the two
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_a_publisher_that_loses_without_accepting_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="not empty"):
        race(tmp_path / "plugin", accept_existing=None)
    assert contents(tmp_path / "plugin") == {"who": "fast"}
    assert [p.name for p in tmp_path.iterdir()] == ["plugin"]


def test_a_rejected_winner_is_an_error(tmp_path: Path) -> None:
    target = folder(tmp_path / "model", partial="1")  # made by someone else, unfinished
    with pytest.raises(OSError, match="not empty"):
        race(target, accept_existing=lambda path: (path / "complete").exists())
    assert contents(target) == {"partial": "1"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_stale_staging_folders_are_cleared_only_when_asked(tmp_path: Path) -> None:
    stale = folder(tmp_path / ".model.tmp-0000dead")
    folder(tmp_path / ".other.tmp-0000beef")
    with publish_directory(tmp_path / "model"):
        pass
    assert stale.is_dir()  # without the caller's lock it may be a live publisher's
    (tmp_path / "model").rmdir()
    with publish_directory(tmp_path / "model", clear_stale=True):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.tmp-0000beef", "model"]


def test_a_replacing_publisher_swaps_the_old_folder_whole(tmp_path: Path) -> None:
    target = tmp_path / "adapter"
    target.mkdir()
    (target / "old.bin").write_text("old")
    with publish_directory(target, replace=True) as staging:
        (staging / "new.bin").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["new.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]

    def killed_mid_write() -> None:
        with publish_directory(target, replace=True) as staging:
            (staging / "half.bin").write_text("half")
            raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        killed_mid_write()
    assert sorted(p.name for p in target.iterdir()) == ["new.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]
