"""Plugin discovery: entry points in the ``rl_verifier`` group, loaded one by one.

A plugin that fails to import, implements an unknown hook, raises inside a hook or
claims a taken verifier name is recorded with its reason; every other plugin keeps
working. ``RLV_LOAD_PLUGINS`` (allow-list) and ``RLV_DISABLE_PLUGINS`` (block-list)
take comma-separated plugin or distribution names.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from typing import Any

import pluggy

from rl_verifier.base.registry import Entry, NameConflict, Registry
from rl_verifier.base.verifier import Verifier
from rl_verifier.discovery import hookspecs
from rl_verifier.discovery.extensions import (
    EnvironmentFactory,
    Loss,
    Preset,
    RewardProtocol,
    SandboxBackend,
)

ENTRY_POINT_GROUP = "rl_verifier"
# The core's own plugins, loaded by module name as entry points are: the built-in
# verifiers, losses and protocols, and the training package's environment.
CORE_PLUGINS = {"builtin": "rl_verifier.builtin.plugin", "training": "rl_verifier.train.hooks"}
ALLOW_ENV = "RLV_LOAD_PLUGINS"
BLOCK_ENV = "RLV_DISABLE_PLUGINS"

# What each registry holds, in the order ``rlv plugins`` lists them (its JSON keys).
KINDS = (
    "verifiers",
    "task_sets",
    "environments",
    "losses",
    "sandbox_backends",
    "reward_protocols",
    "presets",
    "commands",
)

Named = Entry  # deprecated name of a registry entry (task sets, environments)


@dataclass
class PluginInfo:
    name: str
    distribution: str | None
    version: str | None
    state: str = "loaded"  # loaded | failed | disabled
    registered: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def names(self, kind: str) -> list[str]:
        """What this plugin registered of one kind (``KINDS``)."""
        return self.registered.setdefault(kind, [])

    @property
    def verifiers(self) -> list[str]:
        return self.names("verifiers")

    @property
    def task_sets(self) -> list[str]:
        return self.names("task_sets")

    @property
    def environments(self) -> list[str]:
        return self.names("environments")

    @property
    def commands(self) -> list[str]:
        return self.names("commands")

    def fail(self, reason: str) -> None:
        self.errors.append(reason)
        if not self.verifiers:
            self.state = "failed"

    def as_json(self) -> dict[str, Any]:
        head = {"name": self.name, "distribution": self.distribution, "version": self.version}
        kinds = {kind: list(self.registered.get(kind, [])) for kind in KINDS}
        return {**head, "state": self.state, **kinds, "errors": self.errors}


def check_verifier(name: str, cls: type[Verifier]) -> None:
    """A verifier registry holds ``Verifier`` subclasses under their own identifier name."""
    if not (isinstance(cls, type) and issubclass(cls, Verifier)):
        raise TypeError(f"{cls!r} is not a subclass of rl_verifier.Verifier")
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no 'name'")
    if not cls.name.isidentifier():
        raise TypeError(f"verifier name {cls.name!r} of {cls.__qualname__} is not an identifier")


class Plugins:
    """The loaded plugins, one ``Registry`` per kind of extension, and what went wrong."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("rl_verifier")
        self.pm.add_hookspecs(hookspecs)
        failures = self.load_failures
        self.verifiers: Registry[type[Verifier]] = Registry("verifier", check_verifier, failures)
        self.task_sets: Registry[Callable[[], Any]] = Registry("task set", None, failures)
        self.environments: Registry[EnvironmentFactory] = Registry("environment", None, failures)
        self.losses: Registry[Loss] = Registry("loss", None, failures)
        self.sandbox_backends: Registry[SandboxBackend] = Registry("sandbox backend")
        self.reward_protocols: Registry[RewardProtocol] = Registry("reward protocol")
        self.presets: Registry[Preset] = Registry("preset")
        self.infos: dict[str, PluginInfo] = {}

    @property
    def registry(self) -> Registry[type[Verifier]]:
        """The verifiers (the name this registry had when it was the only one)."""
        return self.verifiers

    def add(self, plugin: object, info: PluginInfo) -> bool:
        """Register one plugin object; record and undo it if pluggy rejects it."""
        self.infos[info.name] = info
        try:
            self.pm.register(plugin, name=info.name)
            self.pm.check_pending()
        except Exception as exc:  # noqa: BLE001 - any plugin fault is reported, not raised
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            info.fail(f"{type(exc).__name__}: {exc}")
            return False
        for hook, register in self._registrars(info).items():
            for impl in getattr(self.pm.hook, hook).get_hookimpls():
                if impl.plugin_name == info.name:
                    self._call(impl, info, hook, register=register)
        return True

    def _registrars(self, info: PluginInfo) -> dict[str, object]:
        """One registrar per ``register_*`` hook, each filling its registry for ``info``."""
        keep = self._keeper(info)

        def verifier(cls: type[Verifier], /) -> None:
            keep("verifiers", self.verifiers, getattr(cls, "name", ""), cls)

        def task_set(name: str, load: Callable[[], Any], /) -> None:
            keep("task_sets", self.task_sets, name, load)

        def environment(
            name: str, factory: Callable[..., object], /, settings: type[Any] | None = None
        ) -> None:
            keep("environments", self.environments, name, EnvironmentFactory(factory, settings))

        def loss(value: Loss, /) -> None:
            keep("losses", self.losses, value.name, value)

        def sandbox_backend(
            name: str,
            open: Callable[[Any], object],
            /,
            *,
            processes: bool = False,
            async_processes: bool = False,
        ) -> None:
            backend = SandboxBackend(name, open, processes, async_processes)
            keep("sandbox_backends", self.sandbox_backends, name, backend)

        def reward_protocol(protocol: RewardProtocol, /) -> None:
            keep("reward_protocols", self.reward_protocols, protocol.name, protocol)

        def preset(value: Preset, /) -> None:
            keep("presets", self.presets, value.title, value)

        registrars: dict[str, object] = {
            "register_verifiers": verifier,
            "register_task_sets": task_set,
            "register_environments": environment,
            "register_losses": loss,
            "register_sandbox_backends": sandbox_backend,
            "register_reward_protocols": reward_protocol,
            "register_presets": preset,
        }
        return registrars

    @staticmethod
    def _keeper(info: PluginInfo) -> Callable[[str, Registry[Any], str, Any], None]:
        """Add to a registry for ``info``: a refusal (a taken name, a bad value) is one of
        the plugin's errors, never an exception out of its hook."""

        def keep(kind: str, registry: Registry[Any], name: str, value: Any) -> None:
            try:
                registry.add(name, value, info.name, info.version or "unknown")
            except (NameConflict, TypeError) as exc:
                info.errors.append(str(exc))
            else:
                info.names(kind).append(name)

        return keep

    def remove(self, name: str) -> None:
        """Unload the plugin ``name`` and everything it registered (for tests)."""
        info = self.infos.pop(name, None)
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin, name=name)
        if info is None:
            return
        for kind, registry in self.registries().items():
            for entry_name in info.registered.get(kind, []):
                if entry_name in registry and registry.get(entry_name).plugin == name:
                    registry.remove(entry_name)

    def registries(self) -> dict[str, Registry[Any]]:
        """Every registry, by the kind ``rlv plugins`` lists it under."""
        return {
            "verifiers": self.verifiers,
            "task_sets": self.task_sets,
            "environments": self.environments,
            "losses": self.losses,
            "sandbox_backends": self.sandbox_backends,
            "reward_protocols": self.reward_protocols,
            "presets": self.presets,
        }

    def load_failures(self) -> dict[str, str]:
        """Why each plugin that registered nothing failed, by plugin name."""
        return {i.name: i.errors[0] for i in self.infos.values() if i.state == "failed"}

    def add_commands(self, cli: Any) -> None:
        """Let each plugin add its commands, recording which plugin added which."""
        for impl in self.pm.hook.register_commands.get_hookimpls():
            info = self.infos[impl.plugin_name]
            before = set(cli.commands)
            self._call(impl, info, "register_commands", cli=cli)
            added = sorted(set(cli.commands) - before)
            info.commands.extend(name for name in added if name not in info.commands)

    def call_each(self, hook: str, **kwargs: Any) -> None:
        """Call a hook plugin by plugin, so that a fault stays with its plugin."""
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            self._call(impl, self.infos[impl.plugin_name], hook, **kwargs)

    @staticmethod
    def _call(impl: Any, info: PluginInfo, hook: str, **kwargs: Any) -> None:
        try:
            impl.function(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a plugin's fault is reported, not raised
            info.fail(f"hook {hook} raised {type(exc).__name__}: {exc}")

    def listing(self) -> list[dict[str, Any]]:
        return [info.as_json() for info in self.infos.values()]


def wanted(name: str, distribution: str | None) -> bool:
    """Apply the allow- and block-lists from the environment."""
    names = {normalise(name)} | ({normalise(distribution)} if distribution else set())
    allow = env_names(ALLOW_ENV)
    if allow is not None and not names & allow:
        return False
    block = env_names(BLOCK_ENV) or set()
    return not names & block


def env_names(variable: str) -> set[str] | None:
    raw = os.environ.get(variable)
    if raw is None:
        return None
    return {normalise(part) for part in raw.split(",") if part.strip()}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def discover() -> Plugins:
    """Load the built-in verifiers and every entry-point plugin allowed here."""
    plugins = Plugins()
    core_version = distribution_version("rl-verifier")
    for name, module in CORE_PLUGINS.items():
        plugins.add(importlib.import_module(module), PluginInfo(name, "rl-verifier", core_version))
    seen: set[str] = set()
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in seen:
            continue
        seen.add(entry.name)
        dist = entry.dist
        info = PluginInfo(entry.name, dist.name if dist else None, dist.version if dist else None)
        if not wanted(entry.name, info.distribution):
            info.state = "disabled"
            plugins.infos[info.name] = info
            continue
        try:
            module = entry.load()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            plugins.infos[info.name] = info
            info.fail(f"failed to import {entry.value}: {type(exc).__name__}: {exc}")
            continue
        plugins.add(module, info)
    return plugins


@cache
def get_plugins() -> Plugins:
    """The process-wide plugin set, loaded on first use."""
    return discover()


def loaded_plugins() -> Plugins | None:
    """The process-wide plugin set if it is loaded already (None while it loads: a plugin
    module reading registries at import time sees only what is built in)."""
    return get_plugins() if get_plugins.cache_info().currsize else None


def distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"
