"""rl-verifier plugin: adds ``rlv sandbox doctor`` and ``rlv sandbox image build``."""

from __future__ import annotations

import json
from typing import Any

import click

from rl_verifier import hookimpl
from rl_verifier_sandbox.backends import backend_names


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(sandbox)


class BackendChoice(click.Choice):  # type: ignore[type-arg]
    """The backend table's names when the option is read, so a backend a plugin registers
    (loaded after this module) is a choice too."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[Any, ...]:
        return backend_names()

    @choices.setter
    def choices(self, value: tuple[Any, ...]) -> None:
        pass  # click's constructor sets it; the table is the one source


@click.group()
def sandbox() -> None:
    """Isolated execution of untrusted code."""


@sandbox.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--backend",
    type=BackendChoice(),
    default="bwrap",
    show_default=True,
    help="Backend whose limits to probe.",
)
@click.option(
    "--image",
    default=None,
    metavar="NAME",
    help="Docker image for the docker backend [default: $RLV_SANDBOX_IMAGE or the built one].",
)
def doctor(as_json: bool, backend: str, image: str | None) -> None:
    """Show which backends work here and which limits are enforced (by running probes).

    Exits 1 when the chosen backend does not work or fails a check.
    """
    from rl_verifier_sandbox.doctor import format_report, run_doctor

    report = run_doctor(backend, image=image)
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if not report["checks"] or not all(check["ok"] for check in report["checks"]):
        raise SystemExit(1)


@sandbox.group()
def image() -> None:
    """The docker backend's image."""


@image.command()
@click.option(
    "--name",
    default=None,
    metavar="NAME",
    help="Tag to build [default: $RLV_SANDBOX_IMAGE or the built-in name].",
)
@click.option(
    "--mirror",
    default=None,
    metavar="URL",
    help="Debian mirror for debootstrap and apt [default: http://deb.debian.org/debian].",
)
@click.option("--force", is_flag=True, help="Rebuild even when the image or its cache exists.")
def build(name: str | None, mirror: str | None, force: bool) -> None:
    """Build the docker backend's default image offline from the Debian archive.

    debootstrap (minbase, bookworm) -> docker import -> apt-get install python3
    python3-pytest. Each step is cached under $RLV_SANDBOX_CACHE/docker; nothing is
    rebuilt while the image exists. Needs root and a Docker engine.

    Example: rlv sandbox image build
    """
    from rl_verifier_sandbox.docker import image as images

    done = images.build(
        name or images.default_image(),
        mirror=mirror or images.MIRROR,
        force=force,
        log=lambda line: click.echo(line, err=True),
    )
    click.echo(done)
