"""Host paths shown read-only inside a bwrap sandbox, at the same absolute path.

bwrap runs as the sandbox uid and can only bind what that uid can reach. When we are root, a
path such as ``/root/.elan`` is out of its reach (``/root`` is 0700). So the chain first enters
a private mount namespace as root (util-linux ``unshare``), bind-mounts each path read-only
onto a world-traversable staging tmpfs that exists only in that namespace, and then drops to
the sandbox uid; bwrap binds from the staged copies. The host's mount table is not touched.
Files stay subject to their own permission bits: the sandbox uid reads what "others" may read.
"""

from __future__ import annotations

import functools
import os
import tempfile

from rl_verifier_sandbox.api import BadJob

# $1: staging dir; then the sources; then "--" and the command to exec.
STAGE_SCRIPT = r"""
stage=$1; shift
mount -t tmpfs -o mode=0755,size=1m rlv-stage "$stage" || exit 125
i=0
while [ "$1" != "--" ]; do
  if [ -d "$1" ]; then mkdir "$stage/$i"; else : > "$stage/$i"; fi
  mount --bind "$1" "$stage/$i" && mount -o remount,bind,ro "$stage/$i" || exit 125
  i=$((i + 1)); shift
done
shift
exec "$@"
"""


@functools.cache
def stage_dir() -> str:
    """An empty, world-traversable directory used as the private staging mount point."""
    for base in ("/run", tempfile.gettempdir()):
        path = os.path.join(base, "rl-verifier-sandbox-stage")
        try:
            os.makedirs(path, mode=0o755, exist_ok=True)
            os.chmod(path, 0o755)
            return path
        except OSError:
            continue
    raise OSError("no directory to stage read-only host paths in")


def resolve(paths: tuple[str, ...]) -> list[tuple[str, str]]:
    """(source, destination) pairs, parents before children; unknown paths are a job fault."""
    pairs: dict[str, str] = {}
    for path in paths:
        if not os.path.isabs(path):
            raise BadJob(f"readonly path must be absolute: {path!r}")
        if not os.path.exists(path):
            raise BadJob(f"readonly path does not exist: {path!r}")
        pairs[os.path.normpath(path)] = os.path.realpath(path)
    return [(pairs[dst], dst) for dst in sorted(pairs, key=lambda d: (d.count("/"), d))]


def binds(paths: tuple[str, ...], *, root: bool) -> tuple[list[str], list[str]]:
    """(argv prefix run before dropping privileges, bwrap bind options) for ``paths``."""
    pairs = resolve(paths)
    if not pairs:
        return [], []
    if not root:
        return [], [arg for src, dst in pairs for arg in ("--ro-bind", src, dst)]
    stage = stage_dir()
    prefix = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c"]
    prefix += [STAGE_SCRIPT, "sh", stage, *(src for src, _ in pairs), "--"]
    options = [a for i, (_, dst) in enumerate(pairs) for a in ("--ro-bind", f"{stage}/{i}", dst)]
    return prefix, options
