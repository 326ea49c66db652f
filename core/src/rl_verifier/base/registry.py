"""One registry shape for every extension point: values by name, with the plugin that
registered each, one refusal for a taken name and one message for an unknown one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from rl_verifier.base.errors import UserError
from rl_verifier.base.verifier import Verifier

T = TypeVar("T")


class NameConflict(Exception):
    """Two plugins claimed one name in one registry."""


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registration: the value, its name and the plugin (and version) it came from."""

    name: str
    value: T
    plugin: str
    version: str

    @property
    def cls(self) -> T:
        """The value, by the name a verifier registry's callers know it (a class)."""
        return self.value


def unknown_message(kind: str, name: str, known: list[str]) -> str:
    """The one wording of "no such name" for every registry, and for every list of choices."""
    listed = ", ".join(known) or "none installed"
    return f"unknown {kind} '{name}'; known are: {listed}"


class Registry(Generic[T]):
    """Values of one kind (``kind`` names it in messages) by name; a second claim on a
    name is refused, naming both plugins, and the first keeps it."""

    def __init__(
        self,
        kind: str,
        check: Callable[[str, T], None] | None = None,
        load_failures: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        """``check(name, value)`` raises TypeError for a value this registry cannot hold;
        ``load_failures`` names the plugins that failed to load, with the reason, so that
        asking for a name such a plugin would have registered says why it is missing."""
        self.kind = kind
        self._check = check
        self._load_failures = load_failures or dict
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, value: T, plugin: str = "builtin", version: str = "unknown") -> None:
        if self._check is not None:
            self._check(name, value)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.kind} needs a non-empty name, got {name!r}")
        taken = self._entries.get(name)
        if taken is not None and taken.value != value:
            raise NameConflict(
                f"{self.kind} name '{name}' is claimed by {describe(value)} from plugin "
                f"'{plugin}' and by {describe(taken.value)} from plugin '{taken.plugin}'; "
                f"keeping the one from '{taken.plugin}'"
            )
        self._entries[name] = Entry(name, value, plugin, version)

    def get(self, name: str) -> Entry[T]:
        """The entry for ``name``; a UserError listing the known names when there is none."""
        try:
            return self._entries[name]
        except KeyError:
            raise UserError(self.unknown(name)) from None

    def value(self, name: str) -> T:
        return self.get(name).value

    def unknown(self, name: str) -> str:
        failures = self._load_failures()
        if name in failures:
            return f"{self.kind} '{name}' is unavailable: plugin '{name}' failed to load: " + (
                failures[name]
            )
        message = unknown_message(self.kind, name, self.names())
        for plugin, reason in failures.items():
            message += f"; plugin '{plugin}' failed to load ({reason})"
        return message

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> list[tuple[str, Entry[T]]]:
        return sorted(self._entries.items())

    def values(self) -> list[T]:
        """The values in registration order."""
        return [entry.value for entry in self._entries.values()]

    def __getitem__(self, name: str) -> Entry[T]:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


def describe(value: object) -> str:
    """A value as a conflict message names it: a class or function by its dotted path."""
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
        return qualified(value)
    return repr(value)


def qualified(thing: object) -> str:
    return f"{getattr(thing, '__module__', '?')}.{getattr(thing, '__qualname__', thing)}"


VerifierRegistry = Registry[type[Verifier]]  # the verifiers: ``get_plugins().verifiers``
