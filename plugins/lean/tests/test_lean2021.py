"""Finding the REPL through RLV_LEAN_REPL, and the Lean 4 of 2021's front: unpacked on the
host before any sandbox, its folder and toolchain shown read-only. The front here is a stand-in
with the real one's layout and `--lean` interface (``../shared/lean4-2021/repl``); the real
kernel's own tests are in test_real_lean.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rl_verifier_lean.config import LeanConfig
from rl_verifier_lean.lean2021 import FRONT_FILES, HOME_VAR, front_folder
from rl_verifier_lean.locate import LeanMissing, file_launch, repl_launch

# What the real front does with `--lean ARGS`: unpack into $LEAN2021_HOME (default
# ~/.cache/lean4-2021) when the binary is missing, then run it.
FRONT = """#!/bin/sh
home="${LEAN2021_HOME:-${HOME:-/tmp}/.cache/lean4-2021}"
if [ ! -x "$home/lean4-2021/bin/lean" ]; then
  mkdir -p "$home/lean4-2021/bin" "$home/lean4-2021/lib/lean"
  printf '#!/bin/sh\\necho "Lean (version 4.0.0, Release)"\\n' > "$home/lean4-2021/bin/lean"
  chmod +x "$home/lean4-2021/bin/lean"
  echo unpacked >> "$home/unpack.log"
fi
if [ "$1" = --lean ]; then shift; exec "$home/lean4-2021/bin/lean" "$@"; fi
exit 3
"""


def make_front(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in FRONT_FILES:
        (folder / name).write_text("")
    front = folder / "repl"
    front.write_text(FRONT)
    front.chmod(front.stat().st_mode | stat.S_IXUSR)
    return front


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in ("RLV_LEAN_REPL", "RLV_LEAN_PROJECT", HOME_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    return monkeypatch


def test_rlv_lean_repl_names_the_repl_unless_the_config_says_otherwise(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(LeanMissing):
        repl_launch(LeanConfig(), sandboxed=True)
    clean_env.setenv("RLV_LEAN_REPL", "/opt/my repl/repl --flag 'a b'")
    argv = repl_launch(LeanConfig(), sandboxed=True).argv
    assert argv == ["/opt/my", "repl/repl", "--flag", "a b"]
    config = LeanConfig(repl_command=["python", "fake.py"])
    assert repl_launch(config, sandboxed=True).argv == ["python", "fake.py"]
    # A project in the config is the current-Lean path, exactly as without the variable.
    with pytest.raises(LeanMissing, match="project '/nowhere' set but lake"):
        repl_launch(LeanConfig(project="/nowhere"), sandboxed=True)
    clean_env.setenv("RLV_LEAN_REPL", "repl 'unclosed")
    with pytest.raises(LeanMissing, match=r"RLV_LEAN_REPL=.* is not a command line"):
        repl_launch(LeanConfig(), sandboxed=True)


def test_the_2021_front_is_unpacked_on_the_host_and_shown_read_only(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    front = make_front(tmp_path / "shared" / "lean4-2021")
    home = tmp_path / "cache"
    clean_env.setenv(HOME_VAR, str(home))
    clean_env.setenv("RLV_LEAN_REPL", str(front))
    launch = repl_launch(LeanConfig(), sandboxed=True)
    assert (home / "lean4-2021" / "bin" / "lean").is_file()  # before any sandbox started
    assert launch.argv == [str(front)]
    assert launch.env == {HOME_VAR: str(home), "LEAN_PATH": str(home / "lean4-2021/lib/lean")}
    assert launch.paths == sorted([str(front.parent), str(home)])
    assert launch.about.startswith("Lean (version 4.0.0, Release), the Lean 4 of June 2021")
    repl_launch(LeanConfig(), sandboxed=True)
    assert (home / "unpack.log").read_text() == "unpacked\n"  # once
    with pytest.raises(LeanMissing, match="use backend 'repl'"):
        file_launch(LeanConfig(backend="file"))


def test_the_front_is_found_through_a_symlink_and_its_default_home(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    front = make_front(tmp_path / "kernel")
    link = tmp_path / "bin" / "repl"
    link.parent.mkdir()
    link.symlink_to(front)
    clean_env.setenv("HOME", str(tmp_path / "home"))
    launch = repl_launch(LeanConfig(repl_command=[str(link)]), sandboxed=True)
    assert launch.argv == [str(front)]  # its real place, where its own files are
    assert launch.env[HOME_VAR] == str(tmp_path / "home" / ".cache" / "lean4-2021")


def test_other_repl_commands_are_left_as_they_are(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "not-a-front"
    make_front(folder)
    (folder / FRONT_FILES[1]).unlink()
    assert front_folder(str(folder / "repl")) is None
    assert front_folder("repl") is None  # not an absolute path
    launch = repl_launch(LeanConfig(repl_command=[str(folder / "repl")]), sandboxed=True)
    assert launch.env == {} and launch.about == ""
    assert launch.paths == [str(folder / "repl")]


def test_a_front_that_cannot_unpack_says_so(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    front = make_front(tmp_path / "kernel")
    front.write_text("#!/bin/sh\necho 'tar: Error is not recoverable' >&2\nexit 2\n")
    clean_env.setenv(HOME_VAR, str(tmp_path / "cache"))
    with pytest.raises(LeanMissing, match=r"could not unpack its toolchain.*not recoverable"):
        repl_launch(LeanConfig(repl_command=[str(front)]), sandboxed=True)
    assert not os.path.exists(tmp_path / "cache" / "lean4-2021")
