"""Test side of the plain-data channel: functions whose calls run in the solution's process.

Each call is encoded with exact types and written as ``REQ <json>`` on the channel to the
trusted host, which relays it to the solution process; the answer is decoded with exact
types. Every failure of a call arrives as a ``CandidateError``, an ordinary exception that
no protocol treats as a signal: for a builtin exception the solution raised (``ValueError``,
``KeyError``, ...) a subclass of both, so ``pytest.raises(ValueError)`` works; for a
``StopIteration`` (which would end the tests' ``map()``, ``all()`` or ``for`` loop as if the
answers had run out), ``StopAsyncIteration``, an exception group, ``KeyboardInterrupt``,
``SystemExit`` and anything else, a plain ``CandidateError`` (stdlib only).
"""

from __future__ import annotations

import _thread
import builtins
import functools
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import failures, wire
else:  # inside the sandbox, next to this script
    sys.path.insert(0, "/harness")
    import failures
    import wire


class CandidateError(Exception):
    """The call failed in the solution process, or its result was not plain data."""


# Builtin exceptions that the interpreter itself reads as control flow: raised inside the
# tests' ``map()``, ``for``, ``next(it, default)`` or ``async for`` they end it silently.
SIGNALS = (StopIteration, StopAsyncIteration, BaseExceptionGroup)


TURN = _thread.allocate_lock()  # one call at a time on the channel


@functools.cache
def kind_of(name: str) -> type[CandidateError]:
    """The type a solution's exception named ``name`` arrives as: ``CandidateError`` and the
    builtin ``name``, for an ordinary builtin ``Exception``; else ``CandidateError``."""
    kind = getattr(builtins, name, None) if name.isidentifier() else None
    if not isinstance(kind, type) or not issubclass(kind, Exception) or issubclass(kind, SIGNALS):
        return CandidateError
    return type(name, (CandidateError, kind), {"__doc__": f"{name} raised by the solution."})


def raised(text: str) -> CandidateError:
    """The exception the solution reported as ``"<Name>: <message>"`` (see ``kind_of``)."""
    name, _, message = text.partition(": ")
    kind = kind_of(name)
    if kind is not CandidateError:
        try:
            return kind(message)
        except Exception:  # noqa: BLE001 - a builtin that needs other arguments
            pass
    return CandidateError(text)


def function(name: str, out: IO[bytes], inp: IO[bytes]) -> Callable[..., Any]:
    """A stand-in for the solution's ``name``: each call goes over the channel."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with TURN:  # a call from another of the tests' threads waits for this one's answer
            answered, value = ask(name, args, kwargs, out, inp)
        if answered:
            return value
        raise failures.record(value)

    call.__name__ = call.__qualname__ = name
    return call


def ask(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: IO[bytes], inp: IO[bytes]
) -> tuple[bool, Any]:
    """``(True, value)`` for a call the solution answered, else ``(False, CandidateError)``."""
    try:
        request = {
            "call": name,
            "args": [wire.encode(a) for a in args],
            "kwargs": [[str(k), wire.encode(v)] for k, v in kwargs.items()],
        }
    except wire.WireError as exc:
        return False, CandidateError(f"arguments are not plain data: {exc}")
    out.write(b"REQ " + wire.dumps(request))
    line = inp.readline()
    if not line:
        return False, CandidateError("no answer from the solution")
    try:
        reply = wire.loads(line)
        if "ok" in reply:
            return True, wire.decode(reply["ok"])
        error = str(reply.get("error", "call failed"))
    except Exception as exc:  # noqa: BLE001 - an undecodable answer fails the call
        return False, CandidateError(f"malformed answer: {type(exc).__name__}")
    return False, raised(error)
