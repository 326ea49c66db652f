"""The docker backend's default image, built offline from the Debian archive and cached.

``build`` makes it in three cached steps:

1. ``debootstrap --variant=minbase bookworm`` into a temporary directory, packed as
   ``$RLV_SANDBOX_CACHE/docker/debian-bookworm-minbase.tar.gz`` (kept, so a rebuild after the
   engine lost its images needs no debootstrap);
2. ``docker import`` of that tarball as ``BASE_IMAGE``;
3. a Dockerfile ``FROM BASE_IMAGE`` that apt-installs python3 and pytest, built with the
   host's network, tagged ``DEFAULT_IMAGE`` and saved as ``image-<tag>.tar.gz`` in the same
   cache directory; later builds ``docker load`` that file instead of rebuilding.

Nothing is rebuilt while the image exists. ``DEFAULT_IMAGE``'s tag is a hash of the recipe,
so changing the recipe builds a new image.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import importlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rl_verifier import UserError
from rl_verifier_sandbox.api import SandboxUnavailable
from rl_verifier_sandbox.bwrap import pyenv

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_IMAGE = f"rl-verifier-sandbox-base:{SUITE}-minbase"
DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      python3 python3-pytest >/dev/null \\
 && apt-get clean && rm -rf /var/lib/apt/lists/* \\
 && chmod 0755 /root \\
 && python3 -m pytest --version
"""
RECIPE_HASH = hashlib.sha256(f"{SUITE}\n{DOCKERFILE}".encode()).hexdigest()[:10]
DEFAULT_IMAGE = f"rl-verifier-sandbox:{SUITE}-{RECIPE_HASH}"
IMAGE_ENV = "RLV_SANDBOX_IMAGE"

Log = Callable[[str], None]


def default_image() -> str:
    """``$RLV_SANDBOX_IMAGE`` when set, else ``DEFAULT_IMAGE``."""
    return os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE


def cache_dir() -> Path:
    return pyenv.cache_root() / "docker"


def docker_module() -> Any:
    """The Docker SDK (untyped, so imported as ``Any``); ImportError when not installed."""
    return importlib.import_module("docker")


def connect() -> Any:
    """A client of the engine ``DOCKER_HOST`` (or the local socket) names, which answered."""
    try:
        docker = docker_module()
    except ImportError as exc:
        msg = "the 'docker' package is not installed (extra: docker)"
        raise SandboxUnavailable(msg) from exc
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise SandboxUnavailable(f"no Docker engine reachable: {exc}") from exc
    return client


def docker_client() -> Any:
    """``connect()`` for a command: no engine is the user's error, said in one line."""
    try:
        return connect()
    except SandboxUnavailable as exc:
        raise UserError(str(exc)) from exc


def has_image(client: Any, name: str) -> bool:
    docker = docker_module()
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def build(
    name: str = DEFAULT_IMAGE,
    *,
    cache: Path | None = None,
    mirror: str = MIRROR,
    force: bool = False,
    log: Log = print,
) -> str:
    """Make ``name`` exist (see the module docstring); what was done, in a few words."""
    client = docker_client()
    cache = cache or cache_dir()
    with _locked(cache):
        if not force and has_image(client, name):
            return f"{name} is already present"
        saved = cache / f"image-{_file_name(name)}.tar.gz"
        if not force and saved.exists():
            log(f"loading {name} from {saved}")
            with open(saved, "rb") as fh:
                client.images.load(fh)
            if has_image(client, name):
                return f"{name} loaded from {saved}"
        if force or not has_image(client, BASE_IMAGE):
            rootfs = _rootfs_tarball(cache, mirror, force=force, log=log)
            log(f"importing {rootfs} as {BASE_IMAGE}")
            repo, tag = BASE_IMAGE.rsplit(":", 1)
            client.api.import_image_from_file(str(rootfs), repository=repo, tag=tag)
        log(f"building {name} (apt-get install python3 python3-pytest)")
        _docker_build(client, name)
        log(f"saving {name} to {saved}")
        _save(client, name, saved)
        if name == DEFAULT_IMAGE:  # earlier recipes' saved images
            repo = _file_name(DEFAULT_IMAGE.rsplit(":", 1)[0])
            for old in cache.glob(f"image-{repo}_*.tar.gz"):
                if old != saved:
                    old.unlink()
    return f"{name} built"


def _file_name(image: str) -> str:
    return image.replace("/", "_").replace(":", "_")


def _rootfs_tarball(cache: Path, mirror: str, *, force: bool, log: Log) -> Path:
    tarball = cache / f"debian-{SUITE}-minbase.tar.gz"
    if tarball.exists() and not force:
        return tarball
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed (Debian package debootstrap)")
    if os.geteuid() != 0:
        raise UserError("building the sandbox image runs debootstrap, which needs root")
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"debootstrap --variant=minbase {SUITE} (about a minute)")
        argv = ["debootstrap", "--variant=minbase", SUITE, str(root), mirror]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise UserError(f"debootstrap failed: {' | '.join(tail)}")
        partial = Path(tmp) / "rootfs.tar.gz"
        with open(partial, "wb") as out:
            tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
            assert tar.stdout is not None
            with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as gz:
                shutil.copyfileobj(tar.stdout, gz, 1 << 20)
            if tar.wait() != 0:
                raise UserError(f"packing the debootstrap root {root} failed")
        os.replace(partial, tarball)
    return tarball


def _docker_build(client: Any, name: str) -> None:
    docker = docker_module()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(DOCKERFILE)
        tar.addfile(info, io.BytesIO(DOCKERFILE.encode()))
    context.seek(0)
    try:
        client.images.build(
            fileobj=context, custom_context=True, tag=name, network_mode="host", rm=True
        )
    except docker.errors.BuildError as exc:
        lines = [str(step.get("stream", "")).strip() for step in exc.build_log]
        tail = " | ".join(line for line in lines if line)[-400:]
        raise UserError(f"docker build of {name} failed: {exc.msg}: {tail}") from exc


def _save(client: Any, name: str, path: Path) -> None:
    partial = path.with_suffix(".partial")
    with gzip.open(partial, "wb", compresslevel=1) as out:
        for chunk in client.images.get(name).save(named=True):
            out.write(chunk)
    os.replace(partial, path)
