"""pytest fixtures for plugin authors, loaded automatically through ``pytest11``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rl_verifier.plugins import get_plugins
from rl_verifier.verifier import Verifier


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
        registry.add(cls, "test", "0")
        added.append(cls.name)
        return cls

    yield register
    for name in added:
        registry.remove(name)
