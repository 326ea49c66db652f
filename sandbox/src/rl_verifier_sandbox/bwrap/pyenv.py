"""The Python the sandbox sees: the system interpreter plus a read-only, world-readable site dir.

The venv interpreter lives under ``/root/.pyenv`` (mode 0700), which the unprivileged sandbox
uid cannot read, so by default jobs run ``/usr/bin/python3`` with a copy of pytest and its
pure-Python dependencies, built once into a cache dir outside ``/root`` and bound read-only.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

SITE_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py")
SERVER_SCRIPT = Path(__file__).with_name("_server_main.py")
SITE_MOUNT = "/opt/rlv-site"  # where the site dir appears inside the sandbox
PREFIX_MOUNT = "/opt/python"  # where a custom interpreter prefix appears inside


@dataclass(frozen=True)
class PythonEnv:
    """An interpreter visible inside the sandbox."""

    host_prefix: str | None  # bound at PREFIX_MOUNT when set; None means the system /usr
    executable: str  # path inside the sandbox
    site_dir: str  # host path of the read-only site dir (bound at SITE_MOUNT)


def _sources() -> list[Path]:
    out: list[Path] = []
    for name in SITE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        out.append(origin.parent if origin.name == "__init__.py" else origin)
    return out


def _digest(sources: list[Path]) -> str:
    """What the site dir's name depends on: the interpreter, the server script, and the path,
    size and mtime of every ``.py`` file it copies."""
    h = hashlib.sha256(sys.version.encode())
    h.update(SERVER_SCRIPT.read_bytes())
    for src in sources:
        for f in _python_files(src):
            st = os.stat(f)
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _python_files(src: Path) -> list[str]:
    """``src`` itself, or the ``.py`` files under it, sorted (``os.walk``: pathlib's ``rglob``
    takes about 2.5 times as long over pytest's tree)."""
    if not src.is_dir():
        return [str(src)]
    found: list[str] = []
    for folder, _, names in os.walk(src):
        found += [os.path.join(folder, name) for name in names if name.endswith(".py")]
    return sorted(found)


def cache_root() -> Path:
    return Path(os.environ.get("RLV_SANDBOX_CACHE", "/var/cache/rl-verifier"))


def build_site_dir(root: Path | None = None) -> Path:
    """Build (once, atomically, under a lock) the world-readable site dir; return its path."""
    sources = _sources()
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    target = root / f"sandbox-python-{_digest(sources)}"
    if target.is_dir():
        return target
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        # On first build only: importing the core is more than the sandbox needs otherwise.
        from rl_verifier import publish_directory

        with publish_directory(target) as tmp:
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            for src in sources:
                if src.is_dir():
                    shutil.copytree(src, tmp / src.name, ignore=ignore)
                else:
                    shutil.copy2(src, tmp / src.name)
            shutil.copy2(SERVER_SCRIPT, tmp / SERVER_SCRIPT.name)
            for dirpath, _dirnames, filenames in os.walk(tmp):
                os.chmod(dirpath, 0o755)
                for f in filenames:
                    os.chmod(os.path.join(dirpath, f), 0o644)
    return target


_SITE_DIRS: dict[Path, str] = {}  # cache root -> its site dir, checked once per process
_SITE_DIRS_LOCK = threading.Lock()


def default_site_dir() -> str:
    """``build_site_dir()`` once per process and cache root: every sandbox a process opens
    (a verifier's, its fork-server pool's, from several threads at once) binds the same copy,
    and checking it walks pytest's whole tree."""
    root = cache_root()
    with _SITE_DIRS_LOCK:
        if root not in _SITE_DIRS:
            _SITE_DIRS[root] = str(build_site_dir(root))
        return _SITE_DIRS[root]


def system_python() -> PythonEnv:
    """Default: ``/usr/bin/python3`` (always readable) plus the copied site dir."""
    return PythonEnv(None, "/usr/bin/python3", default_site_dir())


def prefix_python(prefix: str, exe: str = "bin/python3") -> PythonEnv:
    """An interpreter prefix readable by the sandbox uid, bound read-only at ``/opt/python``."""
    return PythonEnv(prefix, f"{PREFIX_MOUNT}/{exe}", default_site_dir())
