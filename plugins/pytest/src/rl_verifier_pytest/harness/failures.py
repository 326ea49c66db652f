"""The failed calls of the current test, and which of them the tests never saw (stdlib only).

A test that passes must have seen every failure of the solution it met: caught it in its
own code (``except``, a ``with`` block, ``pytest.raises``, ``unittest``'s ``assertRaises``)
or failed. A failure is unseen, and may have cut the test short, when C code cleared it (an
iteration protocol ending at an ``IndexError``, ``hasattr``, ``getattr``'s default, a
``__del__``, a task nobody awaited) or the standard library's machinery caught and only
logged it (a thread's target, an event loop's callback, a finalizer): such a test does
not pass. The harness calls ``clear`` before each test and ``unseen`` when it has returned.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, TracebackType
from typing import Any

FAILED: list[BaseException] = []
# Set on each recorded exception before it is raised: a handler that catches it replaces
# it (with a traceback from its own frame down); code that clears it in C leaves it.
_here = sys._getframe()
NO_HANDLER = TracebackType(None, _here, _here.f_lasti, _here.f_lineno)
TRACEBACK: Any = vars(BaseException)["__traceback__"]  # read past a subclass's own

STDLIB = os.path.dirname(os.__file__) + os.sep
# Test code, though under the standard library's folder: installed packages and unittest.
NOT_MACHINERY = ("site-packages", "dist-packages", "unittest")


def record(exc: BaseException) -> BaseException:
    """``exc``, about to be raised by the solution (or for it) into the tests: kept until
    ``clear``, its traceback reset to ``NO_HANDLER``."""
    FAILED.append(BaseException.with_traceback(exc, NO_HANDLER))
    return exc


def clear() -> None:
    FAILED.clear()


def machinery(code: CodeType) -> bool:
    """Whether ``code`` is the standard library's own (frozen modules included)."""
    name = code.co_filename
    if name.startswith("<frozen "):
        return True
    return name.startswith(STDLIB) and not name[len(STDLIB) :].startswith(NOT_MACHINERY)


def unseen() -> list[BaseException]:
    """The recorded exceptions that no test code caught. A handler leaves the exception's
    traceback starting at its own frame, which then ran on (or none at all, where it
    dropped the traceback, as ``unittest`` does). An unseen one still has ``NO_HANDLER``
    (3.11 sets the traceback only in a handler), a traceback that starts at a frame that
    stopped at that very instruction (3.12 and later set it in each frame it leaves), or
    one whose handler is the standard library's."""
    lost = []
    for exc in FAILED:
        tb = TRACEBACK.__get__(exc)
        if tb is None:  # caught, then its traceback dropped
            continue
        if tb is NO_HANDLER or tb.tb_frame.f_lasti == tb.tb_lasti or machinery(tb.tb_frame.f_code):
            lost.append(exc)
    return lost
