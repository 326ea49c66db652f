"""Client-supplied names: one non-dot path component, resolved inside its folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rl_verifier.base.errors import UserError
from rl_verifier_server.base.names import MAX_NAME_LENGTH, check_name, child_path
from rl_verifier_server.checkpoints.store import CheckpointRef


@pytest.mark.parametrize(
    "name",
    [".", "..", "", "a" * (MAX_NAME_LENGTH + 1), ".hidden", "a/b", "../x", "a\\b", "a\x00b", "é"],
)
def test_dot_empty_long_and_separator_names_are_user_errors(name: str) -> None:
    with pytest.raises(UserError):
        check_name(name, "checkpoint name")


@pytest.mark.parametrize("name", ["step-10", "seq3", "s0a1:train:0", "a.b_c-d", "a" * 128])
def test_ordinary_names_pass(name: str) -> None:
    assert check_name(name, "checkpoint name") == name


def test_a_non_string_name_is_a_user_error() -> None:
    with pytest.raises(UserError, match="must be a string"):
        check_name(7, "session id")


def test_child_path_refuses_a_component_that_resolves_elsewhere(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", folder / "link")  # the character set alone allows it
    with pytest.raises(UserError, match="does not stay inside"):
        child_path(folder, "link", "weights")
    assert child_path(folder, "run", "weights") == folder / "run" / "weights"


@pytest.mark.parametrize(
    "path",
    [
        "tinker://run/weights/.",
        "tinker://run/weights/..",
        "tinker://../weights/x",
        "tinker://run/weights/",
        "tinker://run/weights/a/b",
        "tinker://run/other/x",
        "file:///etc/passwd",
    ],
)
def test_checkpoint_paths_with_bad_components_are_user_errors(path: str) -> None:
    with pytest.raises(UserError):
        CheckpointRef.parse(path)


def test_a_good_checkpoint_path_round_trips() -> None:
    ref = CheckpointRef.parse("tinker://s1:train:0/sampler_weights/step-2")
    assert (ref.run, ref.kind, ref.name) == ("s1:train:0", "sampler_weights", "step-2")
    assert ref.uri == "tinker://s1:train:0/sampler_weights/step-2"
