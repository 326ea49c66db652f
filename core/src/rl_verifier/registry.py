"""Which verifier class answers to which name, and which plugin put it there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rl_verifier.errors import UserError
from rl_verifier.verifier import Verifier


class NameConflict(Exception):
    """Two plugins claimed one verifier name."""


@dataclass(frozen=True)
class Registration:
    cls: type[Verifier]
    plugin: str
    version: str


class VerifierRegistry:
    """Verifier classes by name; a second claim on a name is refused, naming both."""

    def __init__(self, load_failures: Callable[[], dict[str, str]] | None = None) -> None:
        """``load_failures`` names the plugins that failed to load, with the reason, so
        that asking for one of their verifiers says why it is missing."""
        self._entries: dict[str, Registration] = {}
        self._load_failures = load_failures or dict

    def add(self, cls: type[Verifier], plugin: str, version: str) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Verifier)):
            raise TypeError(f"{cls!r} is not a subclass of rl_verifier.Verifier")
        if not cls.name:
            raise TypeError(f"{cls.__qualname__} has no 'name'")
        taken = self._entries.get(cls.name)
        if taken is not None and taken.cls is not cls:
            raise NameConflict(
                f"verifier name '{cls.name}' is claimed by {qualified(cls)} from plugin "
                f"'{plugin}' and by {qualified(taken.cls)} from plugin '{taken.plugin}'; "
                f"keeping the one from '{taken.plugin}'"
            )
        self._entries[cls.name] = Registration(cls, plugin, version)

    def get(self, name: str) -> Registration:
        try:
            return self._entries[name]
        except KeyError:
            raise UserError(self._unknown(name)) from None

    def _unknown(self, name: str) -> str:
        failures = self._load_failures()
        if name in failures:
            return (
                f"verifier '{name}' is unavailable: plugin '{name}' failed to load: "
                + failures[name]
            )
        known = ", ".join(sorted(self._entries)) or "none installed"
        message = f"unknown verifier '{name}'; known verifiers: {known}"
        for plugin, reason in failures.items():
            message += f"; plugin '{plugin}' failed to load ({reason})"
        return message

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> list[tuple[str, Registration]]:
        return sorted(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
