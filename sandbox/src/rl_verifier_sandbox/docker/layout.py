"""Where a docker job's read-only files and host paths are mounted.

A container's mounts are fixed when it starts, so warm containers are kept per ``Layout``:

* ``policy.readonly_files`` go into root-owned tmpfs mounts (mode 0755) at the shallowest
  directory of each path that the image lacks (``/tests`` for ``/tests/x.py``); the
  supervisor writes them as root before each job and wipes them after. A file whose
  directory exists in the image (``/etc/x``) is refused: a mount there would hide the
  image's own files.
* ``policy.readonly_paths`` are read-only bind mounts of the host path at the same absolute
  path (the engine must run on this host). Every image directory on the way must be
  traversable by the job uid: Debian makes ``/root`` 0700, so the default image opens it
  (0755, it holds only shell dotfiles). A tmpfs over it would not help: runc gives a tmpfs
  the mode of the directory it covers.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rl_verifier_sandbox.api import BadJob
from rl_verifier_sandbox.jobs import hostpaths

# Answers, per absolute path, "open" (a directory the job uid can traverse), "closed" (one
# it cannot), "file" or "missing", as seen by the job uid inside the image.
Probe = Callable[[list[str]], dict[str, str]]

PROBE_SH = r"""
for p; do
  if [ -d "$p" ]; then [ -x "$p" ] && echo open || echo closed
  elif [ -e "$p" ]; then echo file
  else echo missing
  fi
done
"""


@dataclass(frozen=True)
class Layout:
    ro_dirs: tuple[str, ...] = ()  # root-owned tmpfs for readonly_files
    binds: tuple[tuple[str, str], ...] = ()  # (host source, container target), read-only


def ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _ro_file_dir(path: str, seen: Mapping[str, str]) -> str:
    for directory in ancestors(path):
        if seen[directory] == "missing":
            return directory
        if seen[directory] != "open":
            break
    where = posixpath.dirname(path)
    raise BadJob(
        f"readonly file {path!r}: its directory {where!r} exists in the image, and the docker "
        "backend only places readonly files in directories the image lacks"
    )


def _check_reachable(target: str, seen: Mapping[str, str]) -> None:
    for directory in ancestors(target):
        if seen[directory] == "closed":
            raise BadJob(
                f"readonly path {target!r}: the image's directory {directory!r} cannot be "
                "traversed by the job's uid (use an image where it can, like the default one)"
            )
        if seen[directory] != "open":
            return


def _top_level(dirs: Iterable[str]) -> tuple[str, ...]:
    """Drop directories that lie inside another one of the set."""
    out: list[str] = []
    for d in sorted(set(dirs)):
        if not any(d.startswith(parent + "/") for parent in out):
            out.append(d)
    return tuple(out)


def plan(files: Iterable[str], paths: tuple[str, ...], probe: Probe) -> Layout:
    """The mounts a job with these readonly files and readonly paths needs."""
    files = [posixpath.normpath(f) for f in files]
    for f in files:
        if not f.startswith("/") or f == "/":
            raise BadJob(f"readonly file path must be absolute: {f!r}")
    binds = hostpaths.resolve(paths)
    if not files and not binds:
        return Layout()
    wanted = sorted({a for p in [*files, *(dst for _, dst in binds)] for a in ancestors(p)})
    seen = probe(wanted) if wanted else {}
    for _, dst in binds:
        _check_reachable(dst, seen)
    return Layout(_top_level(_ro_file_dir(f, seen) for f in files), tuple(binds))


def ro_relative(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Readonly files as names relative to ``/`` (the supervisor unpacks them there)."""
    return {posixpath.normpath(path).lstrip("/"): data for path, data in files.items()}
