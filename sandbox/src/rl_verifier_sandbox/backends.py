"""The backend table: every sandbox backend, by name, and how to open it.

The three built-in backends are the entries below; a third party adds one with the
``register_sandbox_backends`` hook of its own plugin (``open(options) -> Sandbox``), which
this table reads from the core's registry. ``get_sandbox``, ``rlv sandbox doctor`` (its
backend list) and the plugins' backend settings (``BackendChoice``) all read this table.
Backend modules are imported only when their backend is opened, so an optional dependency
(the docker SDK) costs nothing until then.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from rl_verifier.cli_support import loaded_plugins
from rl_verifier.internal import unknown_message
from rl_verifier_sandbox.api import Sandbox, SandboxUnavailable

AUTO = "auto"  # the name that opens DEFAULT: never the non-isolating process backend
DEFAULT = "bwrap"


@dataclass(frozen=True)
class Options:
    """What ``get_sandbox`` passes to a backend's opener; each backend reads the options it
    knows and ignores the rest (a config may name a docker image and choose bwrap)."""

    image: str | None = None  # docker: the image jobs run in
    uid_slots: int | None = None  # bwrap: how many uids (concurrent jobs) it may hold


@dataclass(frozen=True)
class Backend:
    """One row of the table."""

    name: str
    opener: str | Callable[[Options], Sandbox]  # or "module:function" (imported when opened)
    processes: bool = False  # Sandbox.open_process works: live pipes (a two-process relay)
    async_processes: bool = False  # Sandbox.open_async_process works: asyncio pipes (a REPL)

    def open(self, options: Options) -> Sandbox:
        """Import the backend's module and open it; SandboxUnavailable when it cannot run."""
        if callable(self.opener):
            return self.opener(options)
        module, _, function = self.opener.partition(":")
        opener = getattr(importlib.import_module(module), function)
        return cast(Callable[[Options], Sandbox], opener)(options)


BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "bwrap",
            "rl_verifier_sandbox.bwrap.backend:open_sandbox",
            processes=True,
            async_processes=True,
        ),
        Backend("docker", "rl_verifier_sandbox.docker.backend:open_sandbox", processes=True),
        Backend("process", "rl_verifier_sandbox.process:open_sandbox"),
    )
}


def all_backends() -> dict[str, Backend]:
    """The built-in backends, then those plugins registered (once plugins are loaded)."""
    plugins = loaded_plugins()
    added = plugins.sandbox_backends.values() if plugins is not None else []
    extra = {
        b.name: Backend(b.name, opener(b.open), b.processes, b.async_processes)
        for b in added
        if b.name not in BACKENDS
    }
    return {**BACKENDS, **extra}


def opener(open_sandbox: Callable[[Any], object]) -> Callable[[Options], Sandbox]:
    return cast(Callable[[Options], Sandbox], open_sandbox)


def backend_names(*, processes: bool = False, async_processes: bool = False) -> tuple[str, ...]:
    """Names in the table (without ``auto``), in table order; only those that can hold live
    processes (``processes``) or asyncio processes (``async_processes``) when asked."""
    return tuple(
        b.name
        for b in all_backends().values()
        if (b.processes or not processes) and (b.async_processes or not async_processes)
    )


def open_backend(name: str, options: Options) -> Sandbox:
    """Open the backend ``name`` (``auto``: the default one); SandboxUnavailable for a name
    not in the table, or a backend that cannot run here."""
    table = all_backends()
    backend = table.get(DEFAULT if name == AUTO else name)
    if backend is None:
        raise SandboxUnavailable(unknown_message("sandbox backend", name, [AUTO, *table]))
    return backend.open(options)
