"""Test side of the plain-data channel: functions whose calls run in the solution's process.

Each call is encoded with exact types and written as ``REQ <json>`` on the channel to the
trusted host, which relays it to the solution process; the answer is decoded with exact
types. A builtin exception raised by the solution (``ValueError``, ``KeyError``, ...) is
raised again here by type, so ``pytest.raises(ValueError)`` works; anything else is a
``CandidateError`` (stdlib only).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_verifier_pytest.harness import wire
else:  # inside the sandbox, next to this script
    sys.path.insert(0, "/harness")
    import wire


class CandidateError(Exception):
    """The call failed in the solution process, or its result was not plain data."""


def raised(text: str) -> Exception:
    """The exception the solution reported as ``"<Name>: <message>"``: a builtin Exception
    subclass by name, else a ``CandidateError`` carrying the text."""
    name, _, message = text.partition(": ")
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and name.isidentifier():
        try:
            return kind(message)
        except Exception:  # noqa: BLE001 - a builtin that needs other arguments
            pass
    return CandidateError(text)


def function(name: str, out: IO[bytes], inp: IO[bytes]) -> Callable[..., Any]:
    """A stand-in for the solution's ``name``: each call goes over the channel."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            request = {
                "call": name,
                "args": [wire.encode(a) for a in args],
                "kwargs": [[str(k), wire.encode(v)] for k, v in kwargs.items()],
            }
        except wire.WireError as exc:
            raise CandidateError(f"arguments are not plain data: {exc}") from None
        out.write(b"REQ " + wire.dumps(request))
        line = inp.readline()
        if not line:
            raise CandidateError("no answer from the solution")
        reply = wire.loads(line)
        if "ok" in reply:
            return wire.decode(reply["ok"])
        raise raised(str(reply.get("error", "call failed")))

    call.__name__ = call.__qualname__ = name
    return call
