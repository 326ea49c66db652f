"""Single-process mode: find the solution's code in its module and watch it in place
(stdlib only; ``watch`` wraps each callable).

The solution's code is what its source file defines: its functions (and what wraps one:
``functools.cache``, ``partial``, a decorator), its classes (defined in its module or
holding its functions, nested ones included) and, in those, every method, static or class
method, property and ``cached_property``, plus the ``__exit__`` and ``__aexit__`` they
inherit; and the context managers that ``@contextmanager`` makes of its generators.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness.watch import ENDINGS, GETTER, Watch
else:  # mounted read-only next to the other harness scripts
    sys.path.insert(0, "/harness")
    from watch import ENDINGS, GETTER, Watch

EXITS = ("__exit__", "__aexit__")
DICT = type.__dict__["__dict__"]  # a class's own namespace, whatever its metaclass says
MRO = type.__dict__["__mro__"]
METHODS = (types.FunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)


def static(cls: type, key: str) -> Any:
    """``key`` as ``cls`` or the first of its bases defines it, read from their own
    namespaces (no descriptor or metaclass runs); ``None`` where none does."""
    for base in MRO.__get__(cls):
        namespace = DICT.__get__(base)
        if key in namespace:
            return namespace[key]
    return None


class Walk:
    def __init__(self, watch: Watch, module: str) -> None:
        self.watch = watch
        self.module = module
        self.classes: list[type] = []

    def own(self, value: Any) -> bool:
        """Whether ``value`` is a function of the solution's file, or wraps one."""
        for _ in range(8):
            if type(value) is types.FunctionType and self.watch.owns(value.__code__):
                return True
            if isinstance(value, type):
                return False
            inner = [getattr(value, a, None) for a in ("__wrapped__", "__func__", "func")]
            found = [i for i in inner if i is not None]
            if not found:
                return False
            value = found[0]
        return False

    def watched(
        self, value: Any, name: str, endings: tuple[type, ...], plain_only: bool = False
    ) -> Any:
        """``value`` watched, where it is the solution's callable; else ``None``."""
        if isinstance(value, type) or not callable(value) or not self.own(value):
            return None
        if plain_only:
            watched = self.watch.call(value, name, endings, plain_only=True)
        else:
            watched = self.watch.function(value, name, endings)
        if type(value) is not types.FunctionType:  # cache_info(), func, args, ...
            for attr in dir(value):
                if not attr.startswith("_") and not hasattr(watched, attr):
                    setattr(watched, attr, getattr(value, attr))
        return watched

    def member(self, value: Any, name: str) -> Any:
        """``value`` of a class's namespace, watched; ``None`` to leave it as it is."""
        endings = ENDINGS.get(name.rpartition(".")[2], ())
        if type(value) in (staticmethod, classmethod):
            inner = self.watched(value.__func__, name, endings)
            return None if inner is None else type(value)(inner)
        if type(value) is property:
            parts: list[Any] = [value.fget, value.fset, value.fdel]
            watched = [self.watched(p, name, GETTER if i == 0 else ()) for i, p in enumerate(parts)]
            if all(w is None for w in watched):
                return None
            getter, setter, deleter = (w or p for w, p in zip(watched, parts, strict=True))
            return property(getter, setter, deleter, value.__doc__)
        if type(value) is functools.cached_property:
            func = self.watched(value.func, name, GETTER)
            if func is not None:
                value.func = func
            return None
        return self.watched(value, name, endings)

    def cls(self, cls: type) -> None:
        """Watch ``cls``, where it is the solution's."""
        if any(cls is c for c in self.classes):
            return
        namespace = dict(DICT.__get__(cls))
        if cls.__module__ != self.module and not any(self.own(v) for v in namespace.values()):
            return
        self.classes.append(cls)
        for key, value in namespace.items():
            if isinstance(value, type):
                self.cls(value)
            elif key != "__del__":
                watched = self.member(value, f"{cls.__name__}.{key}")
                if watched is not None:
                    type.__setattr__(cls, key, watched)
        for key in EXITS:
            method = static(cls, key)
            if type(method) in METHODS and not any(method is w for w in self.watch.exits):
                type.__setattr__(cls, key, self.watch.exit(method, key, lambda this: True))


def watch_contextmanagers(watch: Watch) -> None:
    """``@contextmanager`` and ``@asynccontextmanager`` objects made of the solution's
    generators: their ``__exit__`` (the standard library's) swallows what the generator
    caught."""
    for kind, key in (
        (contextlib._GeneratorContextManager, "__exit__"),
        (contextlib._AsyncGeneratorContextManager, "__aexit__"),
    ):

        def made_by_solution(this: Any) -> bool:
            gen = getattr(this, "gen", None)
            code = getattr(gen, "gi_code", None) or getattr(gen, "ag_code", None)
            return isinstance(code, types.CodeType) and watch.owns(code)

        method = DICT.__get__(kind)[key]
        type.__setattr__(kind, key, watch.exit(method, key, made_by_solution))


def watch_module(solution: types.ModuleType, path: str, plain_only: bool) -> None:
    """Watch the code of the ``solution`` module (from ``path``) in place; with
    ``plain_only``, its public functions must return plain data."""
    watch = Watch(path)
    watch_contextmanagers(watch)
    walk = Walk(watch, solution.__name__)
    namespace = dict(vars(solution))
    for value in namespace.values():
        if isinstance(value, type):
            walk.cls(value)
    for key, value in namespace.items():
        watched = walk.watched(value, key, (), plain_only and not key.startswith("_"))
        if watched is not None:
            setattr(solution, key, watched)
