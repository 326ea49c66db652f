"""``rlv cache``: look at or empty the on-disk verdict cache (``RLV_VERDICT_CACHE``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rl_verifier.base.errors import UserError
from rl_verifier.scoring.verdict_cache import CACHE_VARIABLE, DiskStore, disk_path

PATH_HELP = f"The cache file [default: ${CACHE_VARIABLE}]."


def _store(path: Path | None) -> DiskStore:
    chosen = path or disk_path()
    if chosen is None:
        raise UserError(
            f"no on-disk verdict cache: set {CACHE_VARIABLE}=PATH (or pass --path); "
            "without it verdicts are cached in memory only, per process"
        )
    if not chosen.exists():
        raise UserError(f"{chosen}: no such cache file")
    return DiskStore(chosen)


@click.group(epilog=f"Example: {CACHE_VARIABLE}=~/verdicts.sqlite rlv cache stats")
def cache() -> None:
    """The on-disk verdict cache of deterministic verifiers."""


@cache.command(epilog="Example: rlv cache stats --path verdicts.sqlite")
@click.option("--path", type=click.Path(path_type=Path, dir_okay=False), help=PATH_HELP)
def stats(path: Path | None) -> None:
    """Entries per verifier, their mean first scoring time, and the file's size."""
    store = _store(path)
    try:
        click.echo(json.dumps(store.stats(), indent=2))
    finally:
        store.close()


@cache.command(epilog="Example: rlv cache clear --path verdicts.sqlite")
@click.option("--path", type=click.Path(path_type=Path, dir_okay=False), help=PATH_HELP)
def clear(path: Path | None) -> None:
    """Remove every cached verdict."""
    store = _store(path)
    try:
        removed = store.clear()
    finally:
        store.close()
    click.echo(f"removed {removed} cached verdicts from {store.path}")
