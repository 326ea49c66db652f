"""pytest fixtures for plugin authors, loaded automatically through ``pytest11``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rl_verifier.base.verifier import Verifier
from rl_verifier.discovery.plugins import PluginInfo, get_plugins


@pytest.fixture
def register_verifier() -> Iterator[Callable[[type[Verifier]], type[Verifier]]]:
    """Register verifier classes for one test, as a plugin would; undone afterwards.

    A class that is already installed under its name stays as it was (and stays installed
    after the test); another class claiming an installed name is refused (``NameConflict``).
    """
    registry = get_plugins().registry
    added: list[str] = []

    def register(cls: type[Verifier]) -> type[Verifier]:
        if cls.name in registry and registry.get(cls.name).cls is cls:
            return cls  # installed by its plugin: not this test's to remove
        registry.add(cls.name, cls, "test", "0")
        added.append(cls.name)
        return cls

    yield register
    for name in added:
        registry.remove(name)


@pytest.fixture
def register_plugin() -> Iterator[Callable[..., PluginInfo]]:
    """Load a plugin object (a module or class with ``@hookimpl`` hooks) for one test, as
    an entry point would, into the process-wide plugins; removed afterwards with all it
    registered. Returns what ``rlv plugins`` reports of it.

    ``register_plugin(MyPlugin, name="toy")``
    """
    names: list[str] = []

    def register(plugin: object, name: str = "test-plugin") -> PluginInfo:
        plugins = get_plugins()
        info = PluginInfo(name, "test", "0")
        plugins.add(plugin, info)
        names.append(name)
        return info

    yield register
    for name in names:
        get_plugins().remove(name)
