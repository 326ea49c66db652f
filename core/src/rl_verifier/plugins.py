"""Plugin discovery: entry points in the ``rl_verifier`` group, loaded one by one.

A plugin that fails to import, implements an unknown hook, raises inside a hook or
claims a taken verifier name is recorded with its reason; every other plugin keeps
working. ``RLV_LOAD_PLUGINS`` (allow-list) and ``RLV_DISABLE_PLUGINS`` (block-list)
take comma-separated plugin or distribution names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from typing import Any

import pluggy

from rl_verifier import builtin, hookspecs
from rl_verifier.hookspecs import EnvironmentRegistrar, TaskSetRegistrar, VerifierRegistrar
from rl_verifier.registry import NameConflict, VerifierRegistry
from rl_verifier.train import hooks as train_hooks
from rl_verifier.verifier import Verifier

ENTRY_POINT_GROUP = "rl_verifier"
ALLOW_ENV = "RLV_LOAD_PLUGINS"
BLOCK_ENV = "RLV_DISABLE_PLUGINS"


@dataclass
class PluginInfo:
    name: str
    distribution: str | None
    version: str | None
    state: str = "loaded"  # loaded | failed | disabled
    verifiers: list[str] = field(default_factory=list)
    task_sets: list[str] = field(default_factory=list)
    environments: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def fail(self, reason: str) -> None:
        self.errors.append(reason)
        if not self.verifiers:
            self.state = "failed"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "state": self.state,
            "verifiers": self.verifiers,
            "task_sets": self.task_sets,
            "environments": self.environments,
            "commands": self.commands,
            "errors": self.errors,
        }


@dataclass(frozen=True)
class Named:
    """A task set or environment factory, with the plugin that registered it."""

    name: str
    value: Callable[..., Any]
    plugin: str


class Plugins:
    """The loaded plugins, their verifiers and what went wrong."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("rl_verifier")
        self.pm.add_hookspecs(hookspecs)
        self.registry = VerifierRegistry(self.load_failures)
        self.task_sets: dict[str, Named] = {}
        self.environments: dict[str, Named] = {}
        self.infos: dict[str, PluginInfo] = {}

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
        task_sets: TaskSetRegistrar = self._named_registrar(
            info, self.task_sets, "task set", info.task_sets
        )
        environments: EnvironmentRegistrar = self._named_registrar(
            info, self.environments, "environment", info.environments
        )
        registrars: dict[str, object] = {
            "register_verifiers": self._registrar(info),
            "register_task_sets": task_sets,
            "register_environments": environments,
        }
        for hook, register in registrars.items():
            for impl in getattr(self.pm.hook, hook).get_hookimpls():
                if impl.plugin_name == info.name:
                    self._call(impl, info, hook, register=register)
        return True

    def load_failures(self) -> dict[str, str]:
        """Why each plugin that registered nothing failed, by plugin name."""
        return {i.name: i.errors[0] for i in self.infos.values() if i.state == "failed"}

    def add_commands(self, cli: Any) -> None:
        """Let each plugin add its commands, recording which plugin added which."""
        for impl in self.pm.hook.register_commands.get_hookimpls():
            info = self.infos[impl.plugin_name]
            before = set(cli.commands)
            self._call(impl, info, "register_commands", cli=cli)
            info.commands.extend(sorted(set(cli.commands) - before))

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

    def _registrar(self, info: PluginInfo) -> VerifierRegistrar:
        def register(cls: type[Verifier], /) -> None:
            try:
                self.registry.add(cls, info.name, info.version or "unknown")
            except (NameConflict, TypeError) as exc:
                info.errors.append(str(exc))
            else:
                info.verifiers.append(cls.name)

        return register

    @staticmethod
    def _named_registrar(
        info: PluginInfo, table: dict[str, Named], what: str, listed: list[str]
    ) -> Callable[[str, Callable[..., Any]], None]:
        """A ``TaskSetRegistrar`` or ``EnvironmentRegistrar`` filling ``table``."""

        def register(name: str, value: Callable[..., Any], /) -> None:
            taken = table.get(name)
            if taken is not None:
                info.errors.append(
                    f"{what} '{name}' from plugin '{info.name}' is already registered by "
                    f"plugin '{taken.plugin}'; keeping the one from '{taken.plugin}'"
                )
                return
            table[name] = Named(name, value, info.name)
            listed.append(name)

        return register

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
    plugins.add(builtin, PluginInfo("builtin", "rl-verifier", core_version))
    plugins.add(train_hooks, PluginInfo("training", "rl-verifier", core_version))
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


def distribution_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"
