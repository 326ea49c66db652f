"""The checkpoint store: whole checkpoints appear atomically; a killed write or delete is
undone or finished; TTLs expire checkpoints."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier_server.base.errors import StatusError
from rl_verifier_server.checkpoints.store import META, CheckpointRef, CheckpointStore, check_ttl

RUN = "s1:train:0"


def save(store: CheckpointStore, name: str, payload: str, overwrite: bool = False) -> Path:
    ref = CheckpointRef.of(RUN, "weights", name)
    with store.writing(ref, {"base_model": "m", "lora": {"rank": 1}}, overwrite) as staging:
        staging.mkdir()
        (staging / "adapter.bin").write_text(payload)
    return store.directory(ref)


def names(store: CheckpointStore) -> set[str]:
    return {item["tinker_path"].rsplit("/", 1)[1] for item in store.listing()}


def test_a_checkpoint_appears_whole_with_its_record(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "step-1", "one")
    assert (folder / "adapter.bin").read_text() == "one"
    assert (
        json.loads((folder / META).read_text())["tinker_path"] == f"tinker://{RUN}/weights/step-1"
    )
    assert sorted(p.name for p in folder.parent.iterdir()) == ["step-1"]  # no staging left


def test_existing_checkpoint_is_kept_unless_overwrite(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "step-1", "one")
    with pytest.raises(UserError, match="exists"):
        save(store, "step-1", "two")
    assert (folder / "adapter.bin").read_text() == "one"
    save(store, "step-1", "two", overwrite=True)
    assert (folder / "adapter.bin").read_text() == "two"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["step-1"]


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    save(store, "step-1", "one")
    ref = CheckpointRef.of(RUN, "weights", "step-1")

    def interrupted_write() -> None:
        with store.writing(ref, {}, overwrite=True) as staging:
            staging.mkdir()
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        interrupted_write()
    folder = store.directory(ref)
    assert (folder / "adapter.bin").read_text() == "one"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["step-1"]


def test_listing_shows_complete_checkpoints_only(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "step-1", "one")
    kind_folder = folder.parent
    # what a killed server leaves: a replaced checkpoint moved aside (record included),
    # a staging folder, a visible folder without its record
    retired = kind_folder / ".step-1.old-1234abcd"
    retired.mkdir()
    (retired / META).write_text((folder / META).read_text())
    (kind_folder / ".step-2.tmp-1234abcd").mkdir()
    (kind_folder / "step-3").mkdir()
    assert names(store) == {"step-1"}


def test_recover_restores_a_checkpoint_whose_replacement_never_arrived(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "step-1", "one")
    kind_folder = folder.parent
    # killed between moving the old folder aside and moving the new one in
    folder.rename(kind_folder / ".step-1.old-1234abcd")
    (kind_folder / ".step-1.tmp-5678abcd").mkdir()
    # killed inside the runtime's own staging of another save
    (kind_folder / "..step-2.tmp-1111.tmp-2222").mkdir()
    assert names(store) == set()
    store.recover()
    assert names(store) == {"step-1"}
    assert (folder / "adapter.bin").read_text() == "one"
    assert sorted(p.name for p in kind_folder.iterdir()) == ["step-1"]


def test_recover_drops_the_old_copy_once_the_new_one_is_in_place(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "step-1", "new")
    old = folder.parent / ".step-1.old-1234abcd"
    old.mkdir()
    (old / "adapter.bin").write_text("old")
    store.recover()
    assert (folder / "adapter.bin").read_text() == "new"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["step-1"]


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_a_ttl_expires_the_checkpoint_from_listings_loads_and_then_disk(tmp_path: Path) -> None:
    clock = Clock()
    store = CheckpointStore(tmp_path, now=clock)
    ref = CheckpointRef.of(RUN, "weights", "rolling")
    with store.writing(ref, {"user_metadata": {"k": "v"}}, False, ttl_seconds=7200) as staging:
        staging.mkdir()
    save(store, "kept", "forever")
    [listed] = [c for c in store.listing() if c["tinker_path"] == ref.uri]
    assert listed["expires_at"] == (clock.now + timedelta(seconds=7200)).isoformat()
    assert listed["user_metadata"] == {"k": "v"}
    assert store.expired() == []

    clock.now += timedelta(seconds=7200)
    assert names(store) == {"kept"}
    with pytest.raises(UserError, match=r"no checkpoint at .*expired"):
        store.read_meta(ref)
    assert store.expired() == [ref]
    store.delete(ref)
    assert not store.directory(ref).exists()
    assert store.expired() == []


def test_set_ttl_moves_or_removes_the_expiry(tmp_path: Path) -> None:
    clock = Clock()
    store = CheckpointStore(tmp_path, now=clock)
    folder = save(store, "a", "one")
    ref = CheckpointRef.of(RUN, "weights", "a")
    store.set_ttl(ref, 3600)
    assert (
        json.loads((folder / META).read_text())["expires_at"]
        == (clock.now + timedelta(hours=1)).isoformat()
    )
    store.set_ttl(ref, None)
    clock.now += timedelta(days=3650)
    assert names(store) == {"a"}


@pytest.mark.parametrize("ttl", [0, 3599, 10 * 366 * 86400, 1.5, "3600", True])
def test_ttls_outside_the_hosted_range_are_refused(ttl: object) -> None:
    with pytest.raises(UserError, match="ttl_seconds"):
        check_ttl(ttl)


def test_deleting_is_all_or_nothing_and_a_missing_checkpoint_is_a_404(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "a", "one")
    ref = CheckpointRef.of(RUN, "weights", "a")

    def killed(point: str, subject: str = "") -> None:
        raise KeyboardInterrupt(point)  # the process dies right after the move

    monkeypatch.setattr("rl_verifier_server.checkpoints.store.pause_point", killed)
    with pytest.raises(KeyboardInterrupt):
        store.delete(ref)
    assert names(store) == set()  # already gone from listings ...
    store.recover()  # ... and the next start finishes the deletion
    assert sorted(p.name for p in folder.parent.iterdir()) == []
    with pytest.raises(StatusError, match="no checkpoint") as refused:
        store.delete(ref)
    assert refused.value.status == 404


def test_recover_never_resurrects_a_deleted_checkpoint_named_like_a_marker(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    folder = save(store, "x.old-y", "one")
    folder.rename(folder.parent / ".x.old-y.del-1234abcd")
    store.recover()
    assert sorted(p.name for p in folder.parent.iterdir()) == []
