"""Single-process mode: one callable of the solution, watched where the tests call it
(stdlib only; ``walk`` finds the callables).

When the caller is not the solution's own code (its source file is ``Watch.path``):

- a ``StopIteration`` or ``StopAsyncIteration`` leaves as a ``RuntimeError`` (as PEP 479
  does for generators): raised into the tests' ``map()``, ``all()``, ``for`` or ``async
  for`` it would end them as if the answers had run out. A protocol method's own ending is
  its answer and passes, unkept (``ENDINGS``);
- everything else it raises is kept for ``failures.unseen``;
- an ``async def`` or a generator is watched the same way while it runs;
- an ``__exit__`` or ``__aexit__`` that swallows an ``AssertionError`` or a kept failure is
  itself a failure that nothing saw: the ``with`` block was cut short.

With ``plain_only`` (``guard_returns``), a call must also return plain data.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import failures
else:  # mounted read-only next to the other harness scripts
    sys.path.insert(0, "/harness")
    import failures

SIGNALS = (StopIteration, StopAsyncIteration)
# What a protocol method may end with, as its answer to the protocol.
ENDINGS: dict[str, tuple[type[BaseException], ...]] = {
    "__next__": (StopIteration,),
    "__anext__": (StopAsyncIteration,),
    "__getitem__": (LookupError,),
    "__missing__": (KeyError,),
    "__getattr__": (AttributeError,),
    "__getattribute__": (AttributeError,),
    "__get__": (AttributeError,),
    "__delattr__": (AttributeError,),
}
GETTER = (AttributeError,)  # a property's ending
CO_GENERATOR, CO_COROUTINE = 0x20, 0x80
PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def plain(value: Any, depth: int = 0) -> bool:
    kind = type(value)
    if kind not in PLAIN or depth > 100:
        return False
    if kind in (list, tuple, set, frozenset):
        return all(plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in value.items())
    return True


def thrown_in(kind: type) -> bool:
    """Whether ``kind`` ends a generator or a task from outside (``close()``, ``cancel()``):
    thrown into the solution's code, not raised by it."""
    if issubclass(kind, GeneratorExit):
        return True
    asyncio = sys.modules.get("asyncio.exceptions")
    return asyncio is not None and issubclass(kind, asyncio.CancelledError)


class Watch:
    """Wraps callables of the solution, whose source file is ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.exits: list[Callable[..., Any]] = []  # the wrappers set as __exit__/__aexit__

    def owns(self, code: types.CodeType) -> bool:
        return code.co_filename == self.path

    def inside(self, frame: types.FrameType | None) -> bool:
        """Whether ``frame`` (a caller) is the solution's own code."""
        return frame is not None and self.owns(frame.f_code)

    def leaving(self, name: str, exc: BaseException, endings: tuple[type, ...]) -> BaseException:
        """What leaves the solution's ``name`` for the tests when it raised ``exc``."""
        kind = type(exc)  # never isinstance: a __class__ property could lie to it
        if issubclass(kind, endings):
            return exc
        if issubclass(kind, SIGNALS):
            error = RuntimeError(f"{name} raised {kind.__name__}")
            error.__cause__ = exc
            return failures.record(error)
        return failures.record(exc)

    def function(
        self, function: Callable[..., Any], name: str, endings: tuple[type, ...] = ()
    ) -> Callable[..., Any]:
        """``function`` watched, an ``async def`` or a generator as one still."""
        flags = function.__code__.co_flags if type(function) is types.FunctionType else 0
        if flags & CO_COROUTINE:
            return self.coroutine(function, name, endings)
        if flags & CO_GENERATOR:
            return self.generator(function, name)
        return self.call(function, name, endings, plain_only=False)

    def call(
        self, function: Callable[..., Any], name: str, endings: tuple[type, ...], plain_only: bool
    ) -> Callable[..., Any]:
        @functools.wraps(function)
        def watched(*args: Any, **kwargs: Any) -> Any:
            try:
                result = function(*args, **kwargs)
            except BaseException as exc:  # raised on, or as a RuntimeError
                if self.inside(sys._getframe(1)):
                    raise
                raise self.leaving(name, exc, endings)  # noqa: B904 - the same exception
            if plain_only and not plain(result) and not self.inside(sys._getframe(1)):
                raise failures.record(TypeError(f"{name} returned {type(result).__name__}"))
            return result

        return watched

    def coroutine(
        self, function: Callable[..., Any], name: str, endings: tuple[type, ...]
    ) -> Callable[..., Any]:
        @functools.wraps(function)
        async def watched(*args: Any, **kwargs: Any) -> Any:
            try:
                return await function(*args, **kwargs)
            except BaseException as exc:  # raised on, or as a RuntimeError
                if self.inside(sys._getframe(1)) or thrown_in(type(exc)):
                    raise
                raise self.leaving(name, exc, endings)  # noqa: B904 - the same exception

        return watched

    def generator(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def watched(*args: Any, **kwargs: Any) -> Any:
            try:
                return (yield from function(*args, **kwargs))
            except BaseException as exc:  # raised on, or as a RuntimeError
                if self.inside(sys._getframe(1)) or thrown_in(type(exc)):
                    raise
                raise self.leaving(name, exc, ())  # noqa: B904 - the same exception

        return watched

    def exit(
        self, method: Callable[..., Any], name: str, applies: Callable[[Any], bool]
    ) -> Callable[..., Any]:
        """``__exit__`` or ``__aexit__``, for the context managers that ``applies`` says
        are the solution's: a failure where it swallows what it must not."""
        if name == "__aexit__":

            async def watched_async(this: Any, kind: Any, exc: Any, tb: Any) -> Any:
                swallowed = await method(this, kind, exc, tb)
                if applies(this) and not self.inside(sys._getframe(1)):
                    self.swallowed(exc, swallowed)
                return swallowed

            watched: Callable[..., Any] = watched_async
        else:

            def watched(this: Any, kind: Any, exc: Any, tb: Any) -> Any:
                swallowed = method(this, kind, exc, tb)
                if applies(this) and not self.inside(sys._getframe(1)):
                    self.swallowed(exc, swallowed)
                return swallowed

        self.exits.append(watched)
        return watched

    def swallowed(self, exc: Any, swallowed: Any) -> None:
        if exc is None or not swallowed:
            return
        if issubclass(type(exc), AssertionError) or any(exc is f for f in failures.FAILED):
            failures.record(AssertionError(f"the solution swallowed {type(exc).__name__}"))
